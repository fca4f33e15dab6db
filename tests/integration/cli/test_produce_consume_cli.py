"""``riverbed produce`` and ``riverbed consume`` as a user runs them, each in its own process
against an embedded broker; what was produced is checked with a plain confluent-kafka
Consumer, what was consumed against records a plain Producer wrote.

The contract (docs/cli.md): one record per stdin line, kcat's ``-K`` rules (first
separator splits; none: null key; empty lines skipped), headers on every record, delivery
errors as one line and exit 1; consume prints one line per record (text or JSON), starts at
the end unless told otherwise, follows until a signal (exit 130/143) unless ``-e`` or
``--max-messages``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import BROKER_CONFIG, ENTRY, new_topic, riverbed, wait_until
from confluent_kafka import Consumer, Producer, TopicPartition

from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = {**BROKER_CONFIG, "auto.create.topics.enable": "false"}
    with EmbeddedBroker(tmp_path_factory.mktemp("cli-data"), config) as broker:
        yield broker.bootstrap_servers


def read_all(bootstrap: str, topic: str, partitions: int = 1) -> list[Any]:
    """Every record of ``topic`` through a plain confluent-kafka Consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "check",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[Any] = []
    ended: set[int] = set()

    def step() -> bool:
        for msg in consumer.consume(100, 0.2):
            if msg.error() is None:
                got.append(msg)
            else:
                ended.add(msg.partition())
        return len(ended) == partitions

    try:
        wait_until(step, 30, f"the end of {topic}")
    finally:
        consumer.close()
    return got


def produce(
    bootstrap: str,
    topic: str,
    records: list[tuple[int, bytes | None, bytes]],
    timestamp_ms: int = 0,
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, key, value in records:
        producer.produce(
            topic, value, key, partition=partition, timestamp=timestamp_ms, headers=[("h", b"1")]
        )
    assert producer.flush(30) == 0


def test_produce_lines_keys_headers_and_binary(bootstrap: str) -> None:
    topic = new_topic(bootstrap)
    stdin = b"k1:v1\nno separator\n\nk2:a:b\n:empty key\nbin:\xff\xfe\x00\n"
    code, out, err = riverbed(
        bootstrap,
        "produce",
        topic,
        "--key-separator",
        ":",
        "--header",
        "src=cli",
        "--header",
        "src=again",
        stdin=stdin,
    )
    assert (code, out, err) == (0, b"", "")
    records = read_all(bootstrap, topic)
    assert [(m.key(), m.value()) for m in records] == [
        (b"k1", b"v1"),
        (None, b"no separator"),
        (b"k2", b"a:b"),
        (b"", b"empty key"),
        (b"bin", b"\xff\xfe\x00"),
    ]  # the empty line is skipped, as kcat does
    assert records[0].headers() == [("src", b"cli"), ("src", b"again")]

    code, out, _ = riverbed(
        bootstrap, "consume", topic, "--from-beginning", "-e", "--format", "json"
    )
    assert code == 0
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert lines[0] == {
        "topic": topic,
        "partition": 0,
        "offset": 0,
        "key": "k1",
        "value": "v1",
        "timestamp": records[0].timestamp()[1],
        "timestamp_type": "CreateTime",
        "headers": [{"key": "src", "value": "cli"}, {"key": "src", "value": "again"}],
    }
    assert (lines[1]["key"], lines[1]["value"]) == (None, "no separator")
    assert lines[4]["value_encoding"] == "base64" and lines[4]["value"] == "//4A"


def test_produce_tab_separator_partition_and_plain_lines(bootstrap: str) -> None:
    topic = new_topic(bootstrap, partitions=3)
    code, _, _ = riverbed(
        bootstrap, "produce", topic, "-K", r"\t", "--partition", "2", stdin=b"a\t1\nb\t2\n"
    )
    assert code == 0
    assert [(m.partition(), m.key(), m.value()) for m in read_all(bootstrap, topic, 3)] == [
        (2, b"a", b"1"),
        (2, b"b", b"2"),
    ]
    code, _, _ = riverbed(bootstrap, "produce", topic, stdin=b"x:1\ny:2")  # no final newline
    assert code == 0
    values = sorted(m.value() for m in read_all(bootstrap, topic, 3) if m.key() is None)
    assert values == [b"x:1", b"y:2"]


def test_produce_errors_are_one_line(bootstrap: str) -> None:
    code, _, err = riverbed(bootstrap, "produce", "no-such-topic", stdin=b"x\n")
    assert code == 1 and err.startswith("riverbed: error: topic no-such-topic is not")
    assert len(err.splitlines()) == 1

    topic = new_topic(bootstrap, partitions=2, **{"max.message.bytes": "200"})
    code, _, err = riverbed(bootstrap, "produce", topic, "--partition", "5", stdin=b"x\n")
    assert (code, err) == (
        1,
        f"riverbed: error: topic {topic} has 2 partition(s); --partition 5 does not exist\n",
    )

    code, _, err = riverbed(
        bootstrap, "produce", topic, "-p", "0", stdin=b"small\n" + b"x" * 1000 + b"\n"
    )  # refused by the broker
    assert code == 1 and len(err.splitlines()) == 1, err
    assert "record(s) not delivered" in err and "MSG_SIZE_TOO_LARGE" in err, err

    code, _, err = riverbed(bootstrap, "produce", topic, "--header", "nokv", stdin=b"x\n")
    assert code == 2 and err == "riverbed: error: --header 'nokv' is not K=V\n"


def test_consume_start_positions_partitions_and_text_formats(bootstrap: str) -> None:
    topic = new_topic(bootstrap, partitions=2)
    produce(
        bootstrap,
        topic,
        [(0, b"a", b"0"), (0, None, b"1"), (0, b"c", b"2"), (1, b"d", b"3")],
        timestamp_ms=1_000,
    )
    produce(bootstrap, topic, [(0, b"e", b"4")], timestamp_ms=5_000)

    def consume(*args: str) -> list[str]:
        code, out, err = riverbed(bootstrap, "consume", topic, "-e", *args)
        assert (code, err) == (0, "")
        return out.decode().splitlines()

    assert sorted(consume("--from-beginning")) == ["0", "1", "2", "3", "4"]
    assert sorted(consume("-g", "to-the-end", "--from-beginning")) == ["0", "1", "2", "3", "4"]
    assert consume("--partition", "0", "--offset", "1") == ["1", "2", "4"]
    assert consume("--partition", "0", "--offset", "-2") == ["2", "4"]  # 2 before the end
    assert consume("--timestamp", "2000") == ["4"]
    assert consume("-p", "0", "--from-beginning", "--print-key") == ["a\t0", "\t1", "c\t2", "e\t4"]
    assert consume("-p", "0", "--from-beginning", "-K", " => ", "--max-messages", "2") == [
        "a => 0",
        " => 1",
    ]
    assert consume("-p", "1") == []  # default: the end, so nothing old
    # a group starts at --offset on its assignment, then commits what it printed
    assert consume("-g", "positioned", "--offset", "1", "-c", "2") == ["1", "2"]
    code, out, _ = riverbed(bootstrap, "groups", "lag", "positioned")
    assert code == 0 and f"positioned {topic} 0 3 4 1" in out.decode().splitlines()

    code, _, err = riverbed(bootstrap, "consume", topic, "--offset", "1", "--from-beginning")
    assert code == 2 and "at most one of" in err
    code, _, err = riverbed(bootstrap, "consume", "no-such-topic", "-e")
    assert code == 1 and err.startswith("riverbed: error: topic no-such-topic is not available")
    code, _, err = riverbed(bootstrap, "consume", topic, "-p", "7", "-e")
    assert code == 1 and "--partition 7 does not exist" in err


def test_consume_follows_until_ctrl_c_and_commits_its_group(bootstrap: str) -> None:
    topic = new_topic(bootstrap, partitions=2)
    process = subprocess.Popen(
        [
            *ENTRY,
            "consume",
            topic,
            "--group",
            "follow",
            "--from-beginning",
            "--bootstrap-server",
            bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lines: list[bytes] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, b"")))
    reader.start()
    try:
        produce(bootstrap, topic, [(0, None, b"first"), (1, None, b"second")])
        wait_until(lambda: len(lines) == 2, 60, "both records printed")
        produce(bootstrap, topic, [(1, None, b"third")])  # still following
        wait_until(lambda: len(lines) == 3, 60, "a record produced after the start")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    finally:
        if process.poll() is None:
            process.kill()
        reader.join(30)
    assert sorted(lines) == [b"first\n", b"second\n", b"third\n"]
    assert b"Traceback" not in process.stderr.read()  # type: ignore[union-attr]
    code, out, _ = riverbed(bootstrap, "groups", "lag", "follow")
    assert code == 0 and out.decode().splitlines()[-1] == "follow TOTAL-LAG 0"  # committed


def test_bootstrap_from_environment_and_unreachable_broker(bootstrap: str, tmp_path: Path) -> None:
    topic = new_topic(bootstrap)
    env = {"RIVERBED_BOOTSTRAP_SERVER": bootstrap}
    assert riverbed(None, "produce", topic, stdin=b"via env\n", env=env)[0] == 0
    code, out, _ = riverbed(None, "consume", topic, "--from-beginning", "-c", "1", env=env)
    assert (code, out) == (0, b"via env\n")
    code, _, err = riverbed("127.0.0.1:1", "consume", topic, "-e")
    assert code == 1 and err.startswith("riverbed: error: cannot reach a broker at 127.0.0.1:1")


def test_consume_into_a_closed_pipe_exits_quietly(bootstrap: str) -> None:
    topic = new_topic(bootstrap)
    riverbed(bootstrap, "produce", topic, stdin=b"".join(b"line %d\n" % i for i in range(20_000)))
    command = " ".join([*ENTRY[:2], repr(ENTRY[2])])
    script = (
        f"{command} consume {topic} --from-beginning -e --bootstrap-server {bootstrap}"
        " | head -n 1; exit ${PIPESTATUS[0]}"
    )
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, timeout=90, env={**os.environ}
    )
    assert (done.returncode, done.stdout) == (0, b"line 0\n"), done.stderr
    assert b"Traceback" not in done.stderr and b"Exception" not in done.stderr


def test_produce_to_a_topic_the_broker_auto_creates(tmp_path: Path) -> None:
    """Metadata starts the auto-creation and answers the topic unknown (as Kafka 4.x):
    ``riverbed produce`` asks again until it exists instead of failing at once."""
    config = {**BROKER_CONFIG, "auto.create.topics.enable": "true"}
    with EmbeddedBroker(tmp_path, config) as broker:
        for i in range(3):  # the race between the creation and the re-ask, three times
            topic = f"auto-{i}"
            code, _, err = riverbed(broker.bootstrap_servers, "produce", topic, stdin=b"a\nb\n")
            assert code == 0, err
            assert [m.value() for m in read_all(broker.bootstrap_servers, topic)] == [b"a", b"b"]
