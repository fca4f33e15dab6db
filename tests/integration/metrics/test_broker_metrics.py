"""``riverbed broker --metrics-listen``: a real broker process scraped while real clients
(confluent-kafka) produce, fail a request and consume; the figures must move.

One broker for the module (a start can take a minute on a loaded 2-core machine); every
wait is a condition with a deadline.  Run alone with::

    .venv/bin/python -m pytest -q -p no:cacheprovider tests/integration/metrics
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from riverbed.testing.broker_process import CLI, free_port, wait_until

START_TIMEOUT_S = 180.0
WAIT_S = 90.0

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


class MetricsBroker:
    """``riverbed broker --metrics-listen`` as a child process."""

    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.metrics_port = free_port()
        self.log_path = tmp / "broker.log"
        args = [
            *CLI,
            "--data-dir",
            str(tmp / "data"),
            "--listen",
            f"127.0.0.1:{self.port}",
            "--metrics-listen",
            f"127.0.0.1:{self.metrics_port}",
            "--log-level",
            "WARNING",
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        wait_until(self._accepting, START_TIMEOUT_S, "the broker to accept connections")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accepting(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"broker exited with {self.proc.returncode}:\n{self.tail()}")
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
        except OSError:
            return False
        return True

    def scrape_text(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
            return str(response.read().decode())

    def scrape(self) -> Samples:
        samples: Samples = {}
        for family in text_string_to_metric_families(self.scrape_text()):
            for sample in family.samples:
                samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
        return samples

    def tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-30:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsBroker]:
    b = MetricsBroker(tmp_path_factory.mktemp("metrics"))
    try:
        yield b
    finally:
        b.stop()
    assert b.proc.returncode == 0, b.tail()


def _grew(broker: MetricsBroker, before: Samples, name: str) -> bool:
    return value(broker.scrape(), name) > value(before, name)


def _produce(bootstrap: str, topic: str, count: int, size: int = 100) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    failures: list[KafkaError] = []

    def report(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    for i in range(count):
        producer.produce(topic, value=b"x" * size, key=b"%d" % i, on_delivery=report)
    assert producer.flush(WAIT_S) == 0
    assert not failures, failures


def _create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(WAIT_S)


def test_produce_moves_bytes_records_offsets_and_fsyncs(broker: MetricsBroker) -> None:
    _create(broker.bootstrap, "m-produce", 2)
    before = broker.scrape()
    _produce(broker.bootstrap, "m-produce", 500)
    after = broker.scrape()

    records_in = value(after, "riverbed_topic_records_in_total", topic="m-produce")
    assert records_in - value(before, "riverbed_topic_records_in_total", topic="m-produce") == 500
    assert value(after, "riverbed_topic_bytes_in_total", topic="m-produce") > 500 * 100
    watermarks = [
        value(after, "riverbed_partition_high_watermark", topic="m-produce", partition=p)
        for p in ("0", "1")
    ]
    assert sum(watermarks) == 500
    p0 = {"topic": "m-produce", "partition": "0"}
    assert value(after, "riverbed_partition_last_stable_offset", **p0) == watermarks[0]
    assert value(after, "riverbed_partition_log_start_offset", **p0) == 0
    assert value(after, "riverbed_partition_log_size_bytes", **p0) > 0
    produced = value(after, "riverbed_requests_total", api="Produce", error="NONE")
    assert produced > value(before, "riverbed_requests_total", api="Produce", error="NONE")
    latency = value(after, "riverbed_request_duration_seconds_count", api="Produce")
    assert latency >= produced
    # Durable produce (flush.messages=1 by default): the group-commit thread fsynced.  A
    # flush is counted after its waiters are answered (and after the zeros kept ahead of
    # the log are synced), so the acks can reach the client before the count moves.
    for name in ("riverbed_fsync_duration_seconds_count", "riverbed_group_commit_batch_size_count"):
        wait_until(functools.partial(_grew, broker, before, name), WAIT_S, f"{name} to grow")
    # each of those flushes is counted once more, by the thread its fsync ran on (the
    # event loop's io_uring where the kernel allows one, else a helper)
    flushes = ("riverbed_log_flushes_total", "riverbed_fsync_duration_seconds_count")
    scraped = broker.scrape()
    by_thread = sum(value(scraped, flushes[0], thread=t) for t in ("event_loop", "helper"))
    assert by_thread == value(scraped, flushes[1]) > 0
    assert value(after, "riverbed_connections_accepted_total", listener="PLAINTEXT") >= 1


def test_a_request_error_shows_its_code(broker: MetricsBroker) -> None:
    _create(broker.bootstrap, "m-exists")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    future = admin.create_topics([NewTopic("m-exists", 1, 1)])["m-exists"]
    with pytest.raises(Exception, match="already exists"):
        future.result(WAIT_S)
    samples = broker.scrape()
    refused = {"api": "CreateTopics", "error": "TOPIC_ALREADY_EXISTS"}
    assert value(samples, "riverbed_requests_total", **refused) >= 1


def _consume(consumer: Consumer, count: int) -> None:
    got = 0

    def more() -> bool:
        nonlocal got
        for message in consumer.consume(num_messages=count - got, timeout=1.0):
            if message.error() is None:
                got += 1
        return got >= count

    wait_until(more, WAIT_S, f"{count} records consumed")


def test_consumer_group_lag_rises_then_drains_to_zero(broker: MetricsBroker) -> None:
    topic, group = "m-lag", "m-lag-group"
    _create(broker.bootstrap, topic)
    _produce(broker.bootstrap, topic, 100)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        _consume(consumer, 100)
        consumer.commit(asynchronous=False)
        lag = {"group": group, "topic": topic, "partition": "0"}
        wait_until(
            lambda: (
                value(broker.scrape(), "riverbed_consumer_group_lag", **lag) == 0
                and value(broker.scrape(), "riverbed_consumer_group_committed_offset", **lag) == 100
            ),
            WAIT_S,
            "the committed offset to show with lag 0",
        )
        _produce(broker.bootstrap, topic, 40)
        assert value(broker.scrape(), "riverbed_consumer_group_lag", **lag) == 40
        _consume(consumer, 40)
        consumer.commit(asynchronous=False)
        assert consumer.committed([TopicPartition(topic, 0)], timeout=WAIT_S)[0].offset == 140
        samples = broker.scrape()
        assert value(samples, "riverbed_consumer_group_lag", **lag) == 0
        assert value(samples, "riverbed_topic_records_out_total", topic=topic) >= 140
        assert value(samples, "riverbed_topic_bytes_out_total", topic=topic) > 140 * 100
        assert value(samples, "riverbed_connections", listener="PLAINTEXT") >= 1
    finally:
        consumer.close()


def test_the_text_format_carries_help_and_types(broker: MetricsBroker) -> None:
    text = broker.scrape_text()
    for name in (
        "riverbed_requests_total",
        "riverbed_request_duration_seconds",
        "riverbed_fsync_duration_seconds",
        "riverbed_group_commit_batch_size",
        "riverbed_log_flushes_total",
        "riverbed_partition_high_watermark",
        "riverbed_consumer_group_lag",
        "riverbed_connections",
    ):
        base = name.removesuffix("_total")
        assert f"# HELP {base}" in text and f"# TYPE {base}" in text, name
