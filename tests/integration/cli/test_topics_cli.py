"""``riverbed topics`` as a user runs it: each command in its own process against an
embedded broker, checking stdout, the one-line error on stderr and the exit code.

Exit codes: 0 done; 1 the broker refused (Kafka's error name in the message) or the
broker is unreachable; 2 a malformed command line (click usage errors and bad
``--config`` arguments)."""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from riverbed.testing.embedded import EmbeddedBroker

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "topics"]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data") as running:
        yield running


def run(bootstrap: str, *args: str, stdin: int | None = subprocess.DEVNULL) -> tuple[int, str, str]:
    """Run ``riverbed topics ARGS --bootstrap-server BOOTSTRAP``; (code, stdout, stderr)."""
    done = subprocess.run(
        [*ENTRY, *args, "--bootstrap-server", bootstrap],
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert "%3|" not in done.stderr and "%3|" not in done.stdout  # no librdkafka noise
    return done.returncode, done.stdout, done.stderr


def topic_names(broker: EmbeddedBroker) -> set[str]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    return set(admin.list_topics(timeout=10).topics)


def test_lifecycle_create_list_describe_alter_grow_delete(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    code, out, _ = run(
        bs,
        "create",
        "orders",
        "--partitions",
        "2",
        "--config",
        "retention.ms=60000",
        "--config",
        "cleanup.policy=compact",
    )
    assert (code, out) == (0, "created topic orders with 2 partition(s)\n")
    assert run(bs, "create", "audit", "--partitions", "1")[0] == 0

    code, out, _ = run(bs, "list")
    assert (code, out.splitlines()) == (0, ["audit 1", "orders 2"])  # internal ones hidden
    broker.call(lambda b: b.groups.ensure_topic())  # internal topics come on first use
    code, out, _ = run(bs, "list", "--all")
    assert code == 0 and "__consumer_offsets" in {line.split()[0] for line in out.splitlines()}

    code, out, _ = run(bs, "describe", "orders")
    assert code == 0
    assert out.splitlines() == [
        "TOPIC orders PARTITIONS 2 INTERNAL false",
        "PARTITION LEADER LOG-START-OFFSET LOG-END-OFFSET",
        f"0 {broker.broker.node_id} 0 0",
        f"1 {broker.broker.node_id} 0 0",
        "CONFIG cleanup.policy=compact DYNAMIC_TOPIC_CONFIG",
        "CONFIG retention.ms=60000 DYNAMIC_TOPIC_CONFIG",
    ]

    code, out, _ = run(
        bs,
        "alter",
        "orders",
        "--config",
        "retention.ms=5000",
        "--config",
        "segment.bytes=1048576",
        "--delete-config",
        "cleanup.policy",
    )
    assert (code, out) == (0, "altered topic orders: 2 set, 1 deleted\n")
    configs = [
        line for line in run(bs, "describe", "orders")[1].splitlines() if line.startswith("CONFIG")
    ]
    assert configs == [
        "CONFIG retention.ms=5000 DYNAMIC_TOPIC_CONFIG",
        "CONFIG segment.bytes=1048576 DYNAMIC_TOPIC_CONFIG",
    ]  # incremental

    code, out, _ = run(bs, "add-partitions", "orders", "--total", "5")
    assert (code, out) == (0, "topic orders now has 5 partition(s)\n")
    assert "orders 5" in run(bs, "list")[1].splitlines()

    code, out, _ = run(bs, "delete", "orders", "--yes")
    assert (code, out) == (0, "deleted topic orders\n")
    assert run(bs, "list")[1].splitlines() == ["audit 1"]


def test_describe_shows_log_start_and_end_offsets(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    assert run(bs, "create", "t", "--partitions", "2")[0] == 0
    producer = Producer({"bootstrap.servers": bs})
    for i in range(7):
        producer.produce("t", value=b"v%d" % i, partition=0)
    producer.produce("t", value=b"only", partition=1)
    assert producer.flush(10) == 0
    admin = AdminClient({"bootstrap.servers": bs})
    admin.delete_records([TopicPartition("t", 0, 3)])[TopicPartition("t", 0, 3)].result(10)

    code, out, _ = run(bs, "describe", "t")
    assert code == 0
    rows = [line.split() for line in out.splitlines()[2:4]]
    node = str(broker.broker.node_id)
    assert rows == [["0", node, "3", "7"], ["1", node, "0", "1"]]
    assert not [line for line in out.splitlines() if line.startswith("CONFIG")]


def test_create_errors_are_one_line_naming_the_problem(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    assert run(bs, "create", "t", "--partitions", "1")[0] == 0
    cases = {
        ("t",): "creating topic t failed: TOPIC_ALREADY_EXISTS",
        ("bad/name",): "creating topic bad/name failed: TOPIC_EXCEPTION",
        ("u", "--config", "retention.ms=soon"): "INVALID_CONFIG: invalid value 'soon' for "
        "retention.ms",
        ("u", "--config", "no.such.config=1"): "INVALID_CONFIG: unknown topic config "
        "'no.such.config'",
    }
    for args, expected in cases.items():
        code, out, err = run(bs, "create", args[0], "--partitions", "1", *args[1:])
        assert code == 1 and out == "", (args, out, err)
        assert err.startswith("riverbed: error: ") and expected in err, (args, err)
        assert len(err.splitlines()) == 1, err
    code, _, err = run(bs, "create", "u", "--partitions", "1", "--config", "retention.ms")
    assert code == 2 and err == "riverbed: error: --config 'retention.ms' is not key=value\n"
    code, _, err = run(bs, "create", "u", "--partitions", "0")
    assert code == 2 and "--partitions" in err
    assert topic_names(broker) == {"t"}  # __consumer_offsets comes on first use


def test_alter_add_partitions_describe_errors(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    assert run(bs, "create", "t", "--partitions", "3", "--config", "retention.ms=1000")[0] == 0
    code, _, err = run(bs, "alter", "t", "--config", "segment.bytes=big")
    assert code == 1 and "INVALID_CONFIG: invalid value 'big' for segment.bytes" in err
    code, _, err = run(bs, "alter", "t")
    assert code == 2 and "nothing to alter" in err
    code, _, err = run(
        bs, "alter", "t", "--config", "retention.ms=1", "--delete-config", "retention.ms"
    )
    assert code == 2 and "retention.ms: both set and deleted" in err
    code, _, err = run(bs, "alter", "nope", "--config", "retention.ms=5")
    assert code == 1 and "altering configs of nope failed: UNKNOWN_TOPIC_OR_PART" in err
    assert "CONFIG retention.ms=1000 DYNAMIC_TOPIC_CONFIG" in run(bs, "describe", "t")[1]

    code, _, err = run(bs, "add-partitions", "t", "--total", "2")
    assert code == 1 and "adding partitions to t failed: INVALID_PARTITIONS" in err
    code, _, err = run(bs, "add-partitions", "nope", "--total", "2")
    assert code == 1 and "UNKNOWN_TOPIC_OR_PART" in err

    code, out, err = run(bs, "describe", "nope")
    assert code == 1 and out == "" and "describing topic nope failed" in err
    assert "nope" not in topic_names(broker)  # describing never auto-creates
    code, _, err = run(bs, "delete", "nope", "--yes")
    assert code == 1 and "deleting topic nope failed: UNKNOWN_TOPIC_OR_PART" in err


def run_on_tty(bootstrap: str, answer: bytes, *args: str) -> tuple[int, str]:
    """Run a command whose stdin is a pseudo-terminal, typing ``answer`` to it."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*ENTRY, *args, "--bootstrap-server", bootstrap],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        os.write(controller, answer)  # buffered by the terminal until click reads it
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
    return proc.returncode, out.decode()


def test_delete_asks_on_a_terminal_and_refuses_without_one(broker: EmbeddedBroker) -> None:
    bs = broker.bootstrap_servers
    assert run(bs, "create", "t", "--partitions", "1")[0] == 0
    code, _, err = run(bs, "delete", "t")  # stdin is /dev/null
    assert code == 1 and "stdin is not a terminal (pass --yes)" in err
    assert "t" in topic_names(broker)

    code, out = run_on_tty(bs, b"n\n", "delete", "t")
    assert code == 1 and "Delete topic t and all its records? [y/N]" in out
    assert "not deleting t" in out and "t" in topic_names(broker)

    code, out = run_on_tty(bs, b"y\n", "delete", "t")
    assert code == 0 and "deleted topic t" in out
    assert "t" not in topic_names(broker)


def test_unreachable_broker_is_reported_at_once() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for command in (
        ["list"],
        ["describe", "t"],
        ["create", "t", "--partitions", "1"],
        ["delete", "t", "--yes"],
    ):
        code, out, err = run(f"127.0.0.1:{port}", *command)
        assert code == 1 and out == ""
        assert err.startswith(f"riverbed: error: cannot reach a broker at 127.0.0.1:{port}")
        # the refused connect itself is reported, not a request timeout after it (no timed
        # assertion: on a loaded 2-core box four CLI starts alone can take over 10 s)
        assert "Connection refused" in err and "timed out" not in err.lower(), err
        assert len(err.splitlines()) == 1
