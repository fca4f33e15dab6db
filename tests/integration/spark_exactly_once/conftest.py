"""Fixtures of the exactly-once sink and read_committed source tests.

* ``cluster``: one embedded Riverbed broker for the session, reached only over the wire
  (or any cluster: ``RIVERBED_EOS_BOOTSTRAP=host:port``);
  ``kafka_cluster``: the Apache Kafka reference broker (``kafka`` marker).
* :func:`transactional_input` fills a topic through a confluent-kafka transactional
  producer: committed transactions, aborted ones (flushed first, so the aborted records
  really are in the log) and one transaction left *open*, so the last stable offset of
  every partition stays below its high watermark (for 10 minutes: then the coordinator
  aborts it, ``transaction.timeout.ms``, and :meth:`TransactionalInput.close` is a no-op).
* :func:`read_records` reads a whole topic as a read_committed consumer once no
  transaction is open in it (LSO == high watermark), with a deadline.
* :func:`run_driver` runs ``eos_driver.py`` (a SparkSession in its own process) with
  failure points armed through the environment.

No fixed sleeps: every wait polls a condition under a deadline sized for a loaded 2-core box.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from confluent_kafka import Consumer, IsolationLevel, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    NewTopic,
    OffsetSpec,
)

from riverbed.spark.transactional_failpoints import FAILPOINT_ENV
from riverbed.testing.child_process import run_grouped

DRIVER = Path(__file__).with_name("eos_driver.py")
DRIVER_TIMEOUT_S = 420.0


EXTERNAL_CLUSTER_ENV = "RIVERBED_EOS_BOOTSTRAP"


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An embedded Riverbed broker, or any cluster named by ``RIVERBED_EOS_BOOTSTRAP``."""
    external = os.environ.get(EXTERNAL_CLUSTER_ENV)
    if external:
        yield external
        return
    from riverbed.testing.embedded import EmbeddedBroker

    with EmbeddedBroker(tmp_path_factory.mktemp("eos-broker")) as broker:
        yield broker.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[str]:
    """The Apache Kafka reference broker (jars from Maven Central, cached)."""
    from riverbed.testing.kafka_reference import KafkaReference

    with KafkaReference() as kafka:
        yield kafka.bootstrap_servers


@pytest.fixture(
    scope="session",
    params=[
        "riverbed",
        pytest.param("kafka", marks=[pytest.mark.kafka, pytest.mark.spark_crash]),
    ],
)
def any_cluster(request: pytest.FixtureRequest) -> str:
    """Riverbed, and (``-m "spark_crash and kafka"``) Apache Kafka: the same tests on both."""
    name = "cluster" if request.param == "riverbed" else "kafka_cluster"
    return str(request.getfixturevalue(name))


def create_topic(bootstrap: str, partitions: int) -> str:
    name = f"eos-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config={"retention.ms": "-1"})])[
        name
    ].result(60)
    return name


@dataclass
class TransactionalInput:
    """A topic written by a transactional producer; ``expected`` is what read_committed sees."""

    topic: str
    committed: list[tuple[bytes, bytes, int, int]]
    aborted_values: set[bytes]
    open_values: set[bytes]
    producer: Producer = field(repr=False)

    def close(self) -> None:
        """Abort the open transaction -- unless the coordinator already did, after
        ``transaction.timeout.ms``, bumping the epoch (the producer is then fenced)."""
        with contextlib.suppress(KafkaException):
            self.producer.abort_transaction(60)


def transactional_input(
    bootstrap: str, partitions: int = 4, transactions: int = 12, per_txn: int = 20
) -> TransactionalInput:
    """Every third transaction aborted; then one transaction left open on every partition."""
    topic = create_topic(bootstrap, partitions)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"eos-input-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 600_000,
        }
    )
    producer.init_transactions(60)
    aborted: set[bytes] = set()
    for t in range(transactions):
        producer.begin_transaction()
        values = []
        for i in range(per_txn):
            key = f"k{(t * per_txn + i) % 37}".encode()
            value = f"t{t}-r{i}".encode()
            values.append(value)
            producer.produce(topic, key=key, value=value, partition=i % partitions)
        producer.flush(60)
        if t % 3 == 2:
            producer.abort_transaction(60)
            aborted.update(values)
        else:
            producer.commit_transaction(60)
    producer.begin_transaction()
    open_values = {f"open-{p}".encode() for p in range(partitions)}
    for p in range(partitions):
        producer.produce(topic, key=b"open", value=f"open-{p}".encode(), partition=p)
    producer.flush(60)
    committed = read_records(bootstrap, topic, wait_stable=False)
    return TransactionalInput(topic, committed, aborted, open_values, producer)


def _offsets(admin: AdminClient, topic: str, level: IsolationLevel) -> dict[int, int]:
    metadata = admin.list_topics(topic, timeout=30).topics[topic]
    request = {KafkaTopicPartition(topic, p): OffsetSpec.latest() for p in metadata.partitions}
    futures = admin.list_offsets(request, isolation_level=level, request_timeout=30)
    return {tp.partition: f.result().offset for tp, f in futures.items()}


def read_records(
    bootstrap: str, topic: str, *, wait_stable: bool = True, deadline_s: float = 180.0
) -> list[tuple[bytes, bytes, int, int]]:
    """(key, value, partition, offset) of every record a read_committed consumer sees.

    With ``wait_stable`` first waits until no transaction is open in ``topic`` (a crashed
    task's transaction is aborted when its id is re-initialised, or after its timeout).
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + deadline_s
    while True:
        stable = _offsets(admin, topic, IsolationLevel.READ_COMMITTED)
        high = _offsets(admin, topic, IsolationLevel.READ_UNCOMMITTED)
        if not wait_stable or stable == high:
            break
        assert time.monotonic() < deadline, f"{topic}: transaction still open {stable} < {high}"
        time.sleep(0.5)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"eos-check-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    out: list[tuple[bytes, bytes, int, int]] = []
    try:
        pending = {p for p, end in stable.items() if end > 0}
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in stable])
        while pending:
            assert time.monotonic() < deadline, f"{topic}: reading stuck, pending {pending}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == -191:  # _PARTITION_EOF
                    pending.discard(message.partition())
                    continue
                raise AssertionError(message.error())
            if message.offset() < stable[message.partition()]:
                out.append((message.key(), message.value(), message.partition(), message.offset()))
    finally:
        consumer.close()
    return out


def expected_output(data: TransactionalInput) -> Counter[tuple[bytes | None, bytes]]:
    """What a clean run of eos_driver.py writes: each committed input record once, tagged
    with its input partition and offset (so a duplicate or a loss is visible)."""
    return Counter((k, v + f"|{p}:{o}".encode()) for k, v, p, o in data.committed)


def output_of(bootstrap: str, topic: str) -> Counter[tuple[bytes | None, bytes]]:
    return Counter((k, v) for k, v, _, _ in read_records(bootstrap, topic))


@dataclass(frozen=True)
class DriverRun:
    returncode: int
    output: str
    seconds: float


def run_driver(
    config: dict[str, Any], failpoint: str | None = None, timeout_s: float = DRIVER_TIMEOUT_S
) -> DriverRun:
    """Run the driver script to its end (or its SIGKILL); its own session and process group."""
    env = {k: v for k, v in os.environ.items() if k != FAILPOINT_ENV}
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if failpoint:
        env[FAILPOINT_ENV] = failpoint
    started = time.monotonic()
    status, out = run_grouped([sys.executable, str(DRIVER), json.dumps(config)], env, timeout_s)
    assert status is not None, f"driver did not finish in {timeout_s:g} s:\n{out[-3000:]}"
    return DriverRun(status, out, time.monotonic() - started)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``spark_crash`` tests (the full crash matrix) run only when selected with ``-m``."""
    if "spark_crash" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="crash matrix: select with -m spark_crash")
    for item in items:
        if "spark_crash" in item.keywords:
            item.add_marker(skip)
