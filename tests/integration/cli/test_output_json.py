"""``--output json`` on the list and describe commands (``topics list``, ``topics
describe``, ``groups list``, ``groups describe``): one JSON document on stdout carrying
what the text rows carry, for scripts; and shell completion scripts."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest
from cli_helpers import BROKER_CONFIG, ENTRY, new_topic, riverbed, wait_until
from confluent_kafka import Consumer, Producer

from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("json-data"), BROKER_CONFIG) as running:
        yield running


def run_json(bootstrap: str, *args: str) -> object:
    code, out, err = riverbed(bootstrap, *args, "--output", "json")
    assert (code, err) == (0, "")
    assert out.count(b"\n") == 1  # one document, one line
    return json.loads(out)


def test_topics_list_and_describe(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = new_topic(bs, partitions=2, **{"retention.ms": "60000"})
    producer = Producer({"bootstrap.servers": bs})
    producer.produce(topic, b"x", partition=1)
    assert producer.flush(30) == 0

    listed = run_json(bs, "topics", "list")
    assert {"name": topic, "partitions": 2, "internal": False} in listed  # type: ignore[operator]
    assert all(not t["internal"] for t in listed)  # type: ignore[attr-defined, index]
    broker.call(lambda b: b.groups.ensure_topic())  # internal topics come on first use
    everything = run_json(bs, "topics", "list", "--all")
    assert "__consumer_offsets" in {t["name"] for t in everything}  # type: ignore[attr-defined, index]

    described = run_json(bs, "topics", "describe", topic)
    assert isinstance(described, dict)
    node = broker.broker.node_id
    assert described["name"] == topic and described["internal"] is False
    assert described["partitions"] == [
        {"partition": 0, "leader": node, "log_start_offset": 0, "log_end_offset": 0},
        {"partition": 1, "leader": node, "log_start_offset": 0, "log_end_offset": 1},
    ]
    assert described["configs"]["retention.ms"] == {
        "value": "60000",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "is_default": False,
    }
    assert described["configs"]["cleanup.policy"]["is_default"] is True


def test_groups_list_and_describe(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    topic = new_topic(bs, partitions=1)
    producer = Producer({"bootstrap.servers": bs})
    for i in range(5):
        producer.produce(topic, b"%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "json-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    try:
        seen: list[int] = []

        def step() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                seen.append(msg.offset())
                if msg.offset() == 2:
                    consumer.commit(msg, asynchronous=False)  # committed offset 3
            return 2 in seen

        wait_until(step, 60, "three records consumed and committed")
        groups = run_json(bs, "groups", "list")
        assert {"group": "json-group", "state": "STABLE", "type": "CLASSIC"} in groups  # type: ignore[operator]
        described = run_json(bs, "groups", "describe", "json-group")
        assert isinstance(described, dict)
        assert described["group"] == "json-group" and described["state"] == "STABLE"
        [member] = described["members"]
        assert member["assignment"] == [{"topic": topic, "partition": 0}]
        assert described["offsets"] == [
            {
                "topic": topic,
                "partition": 0,
                "committed_offset": 3,
                "log_end_offset": 5,
                "lag": 2,
                "member": member["member_id"],
            }
        ]
    finally:
        consumer.close()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    code, out, _ = riverbed(None, "completion", shell)
    assert code == 0 and b"_RIVERBED_COMPLETE" in out
    env = {**os.environ, "_RIVERBED_COMPLETE": f"{shell}_source"}
    direct = subprocess.run(ENTRY, env=env, capture_output=True, timeout=60)
    assert direct.stdout.strip() == out.strip()  # the documented env-var form, same script


def test_completion_completes_commands_and_options() -> None:
    env = {
        **os.environ,
        "_RIVERBED_COMPLETE": "bash_complete",
        "COMP_WORDS": "riverbed con",
        "COMP_CWORD": "1",
    }
    done = subprocess.run(ENTRY, env=env, capture_output=True, text=True, timeout=60)
    assert "plain,consume" in done.stdout.splitlines()
    env.update(COMP_WORDS="riverbed consume t --format ", COMP_CWORD="4")
    done = subprocess.run(ENTRY, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["plain,text", "plain,json"]
