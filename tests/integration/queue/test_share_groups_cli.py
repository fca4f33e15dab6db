"""``riverbed share-groups list | describe | reset-offsets`` against Kafka 4.4 share groups."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from queue_helpers import QueueNames, produce, wait_until

from riverbed.cli.main import _Group
from riverbed.cli.share_groups_command import share_groups

# The Apache Kafka runs here repeat the Riverbed ones against Kafka 4.4: gated
# (tests/conftest.py, -m kafka runs them); test_dead_letter_headers.py stays the queue
# area's Kafka differential in the default suite.
pytestmark = pytest.mark.kafka_variant

ROOT = _Group("riverbed", commands={"share-groups": share_groups})


def run(bootstrap: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(ROOT, ["share-groups", *args, "--bootstrap-server", bootstrap])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_list_describe_reset(queue_names: QueueNames, server_name: str) -> None:
    from confluent_kafka import ShareConsumer

    bootstrap, group, topic = queue_names.bootstrap, queue_names.group, queue_names.topic
    produce(bootstrap, topic, [f"r{i}".encode() for i in range(10)])
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        wait_until(
            lambda: got.extend(m.value() for m in consumer.poll(0.5)) or len(got) >= 10,
            "the ten records",
        )
        consumer.commit_sync(30)
        code, out = run(bootstrap, "list", "--output", "json")
        assert code == 0
        assert {"group": group, "state": "Stable"} in json.loads(out)
        code, out = run(bootstrap, "describe", group, "--output", "json")
        assert code == 0, out
        described = json.loads(out.splitlines()[-1])
        assert described["state"] == "Stable" and len(described["members"]) == 1
        assignment = described["members"][0]["assignment"]
        assert sorted((a["topic"], a["partition"]) for a in assignment) == [
            (topic, 0),
            (topic, 1),
        ]
        code, out = run(bootstrap, "describe", group)
        assert code == 0 and f"GROUP {group} STATE Stable" in out
        code, out = run(bootstrap, "reset-offsets", group, "--topic", topic, "--to-earliest")
        assert code == 1 and "has 1 member(s)" in out
    finally:
        consumer.close()

    assert described["offsets"] is not None, f"{server_name} serves no DescribeShareGroupOffsets"

    def start_offsets() -> dict[int, int]:
        code, out = run(bootstrap, "describe", group, "--output", "json")
        assert code == 0, out
        return {o["partition"]: o["start_offset"] for o in json.loads(out)["offsets"]}

    wait_until(
        lambda: (
            json.loads(run(bootstrap, "describe", group, "--output", "json")[1])["state"] == "Empty"
        ),
        "the group to empty",
    )
    code, out = run(bootstrap, "reset-offsets", group, "--topic", topic, "--to-offset", "1")
    assert code == 0 and "dry run" in out
    code, out = run(
        bootstrap,
        "reset-offsets",
        group,
        "--topic",
        topic,
        "--to-earliest",
        "--execute",
        "--output",
        "json",
    )
    assert code == 0, out
    assert json.loads(out)["offsets"] == [
        {"topic": topic, "partition": 0, "start_offset": 0},
        {"topic": topic, "partition": 1, "start_offset": 0},
    ]
    assert start_offsets() == {0: 0, 1: 0}
    # The records before the new start offset are delivered again to a new consumer.
    again = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    again.subscribe([topic])
    redelivered: list[bytes] = []
    try:
        wait_until(
            lambda: (
                redelivered.extend(m.value() for m in again.poll(0.5)) or len(redelivered) >= 10
            ),
            "the records again",
        )
    finally:
        again.close()
    assert sorted(redelivered) == sorted(got)


def test_unknown_group_is_one_line(share_bootstrap: str) -> None:
    code, out = run(share_bootstrap, "describe", "no-such-group")
    assert code == 1
    assert out.strip() == (
        "riverbed: error: describing share group no-such-group failed: GROUP_ID_NOT_FOUND: "
        "Group no-such-group not found."
    )
