"""``riverbed groups`` against the embedded broker: list, describe (members, committed
offset, log end offset, lag), reset-offsets (refused while active), and the admin APIs
underneath (DeleteGroups, OffsetDelete) plus ``__consumer_offsets`` itself."""

from __future__ import annotations

from click.testing import CliRunner
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient, ConfigResource
from groups_helpers import create_topic, produce, wait_until

from riverbed.cli.groups_command import groups
from riverbed.cli.main import _Group
from riverbed.testing.embedded import EmbeddedBroker

# the real command line's error mapping (one line, exit code) around the groups command
ROOT = _Group("riverbed", commands={"groups": groups})


def run(broker: EmbeddedBroker, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        ROOT, ["groups", *args, "--bootstrap-server", broker.bootstrap_servers]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def consume_and_commit(broker: EmbeddedBroker, upto: int) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "cli",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe(["t"])
    got: list[int] = []

    def step() -> None:
        msg = c.poll(0.05)
        if msg is not None and msg.error() is None and msg.partition() == 0:
            got.append(msg.offset())
            if msg.offset() + 1 == upto:
                c.commit(msg, asynchronous=False)

    wait_until(lambda: upto in {o + 1 for o in got}, 30, "records of partition 0", step)
    return c


def test_list_describe_and_refused_reset_while_active(broker: EmbeddedBroker) -> None:
    create_topic(broker.bootstrap_servers, "t", 2)
    produce(broker.bootstrap_servers, "t", [b"x"] * 20, 2)
    c = consume_and_commit(broker, upto=4)
    try:
        code, out = run(broker, "list")
        assert code == 0 and out.split() == ["cli", "STABLE", "CLASSIC"]
        code, out = run(broker, "describe", "cli")
        assert code == 0
        assert "GROUP cli STATE STABLE" in out
        rows = [line.split() for line in out.splitlines() if line.startswith("t ")]
        assert rows[0][:5] == ["t", "0", "4", "10", "6"]  # committed 4, end 10, lag 6
        assert rows[0][5].startswith("rdkafka-")
        code, out = run(broker, "reset-offsets", "cli", "--topic", "t", "--to-earliest")
        assert code == 1 and out.startswith("riverbed: error: group cli is active")
    finally:
        c.close()


def test_reset_offsets_when_empty(broker: EmbeddedBroker) -> None:
    create_topic(broker.bootstrap_servers, "t", 2)
    produce(broker.bootstrap_servers, "t", [b"x"] * 20, 2)
    consume_and_commit(broker, upto=4).close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})

    def committed() -> dict[int, int]:
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("cli")])["cli"]
        return {tp.partition: tp.offset for tp in fut.result(10).topic_partitions}

    assert run(broker, "reset-offsets", "cli", "--topic", "t", "--to-latest")[0] == 0
    assert committed() == {0: 10, 1: 10}
    assert run(broker, "reset-offsets", "cli", "--topic", "t", "--to-offset", "99")[0] == 0
    assert committed() == {0: 10, 1: 10}  # clamped to the log end
    assert run(broker, "reset-offsets", "cli", "--topic", "t", "--to-offset", "3")[0] == 0
    assert committed() == {0: 3, 1: 3}
    assert (
        run(broker, "reset-offsets", "cli", "--topic", "t", "--to-datetime", "2001-01-01T00:00:00")[
            0
        ]
        == 0
    )
    assert committed() == {0: 0, 1: 0}
    assert (
        run(broker, "reset-offsets", "cli", "--topic", "t", "--to-earliest", "--to-latest")[0] == 1
    )
    assert run(broker, "reset-offsets", "cli", "--topic", "nope", "--to-earliest")[0] == 1

    fut = admin.delete_consumer_groups(["cli"])["cli"]
    fut.result(10)
    code, out = run(broker, "list")
    assert code == 0 and "cli" not in out


def test_offsets_topic_is_internal_and_compacted(broker: EmbeddedBroker) -> None:
    broker.call(lambda b: b.groups.ensure_topic())  # created on first use (FindCoordinator)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    meta = admin.list_topics(timeout=10)
    assert len(meta.topics["__consumer_offsets"].partitions) == 5
    res = ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets")
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["cleanup.policy"].value == "compact"


def test_unreachable_broker_is_reported_at_once_without_client_noise() -> None:
    import socket
    import time

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    for command in (["list"], ["describe", "g"]):
        result = CliRunner().invoke(
            ROOT, ["groups", *command, "--bootstrap-server", f"127.0.0.1:{port}"]
        )
        assert result.exit_code != 0
        assert f"cannot reach a broker at 127.0.0.1:{port}" in result.output
        assert "Traceback" not in result.output and "%3|" not in result.output
    assert time.monotonic() - started < 8, "waited for a request timeout"
