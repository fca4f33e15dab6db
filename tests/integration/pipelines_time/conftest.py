"""Fixtures of the sessions / fraud example tests: a ``riverbed broker`` child process per
test (the examples' topic names are fixed), one local SparkSession per test process with
the runner's settings (RocksDB state store), and helpers to produce and drain topics."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec  # type: ignore[attr-defined]
from pyspark.sql import SparkSession

from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SPARK_CONFIG = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.noDataMicroBatches.enabled": "true",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from riverbed.spark.session import local_session

    session = local_session("riverbed-time-tests", config=SPARK_CONFIG)
    yield session
    session.stop()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        tmp_path / "broker", free_port(), tmp_path / "broker.log", {"num.partitions": "2"}
    )
    process.start(timeout_s=120)
    try:
        yield process
    finally:
        process.close()


def create_topics(bootstrap: str, names: list[str], partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [NewTopic(n, partitions, 1, config={"retention.ms": "-1"}) for n in names]
    for future in admin.create_topics(wanted).values():
        future.result(60)


def produce_json(bootstrap: str, topic: str, values: list[dict[str, Any]]) -> None:
    """Produce values (key = user_id) in this order, partitioned by key."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, key=str(value["user_id"]), value=json.dumps(value))
    assert producer.flush(60) == 0


def drain(bootstrap: str, topic: str, timeout_s: float = 120) -> list[tuple[bytes | None, Any]]:
    """Every committed record of ``topic`` (read_committed, up to the end of each
    partition): ``(key, parsed value)`` in partition then offset order.

    The examples write transactionally, so the high watermark counts commit markers that
    no consumer receives: the read ends at each partition's EOF, once no transaction is
    open (last stable offset == high watermark)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = sorted(admin.list_topics(topic, timeout=timeout_s).topics[topic].partitions)

    def offsets(level: IsolationLevel) -> dict[int, int]:
        request = {TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}
        futures = admin.list_offsets(request, isolation_level=level, request_timeout=30)
        return {tp.partition: f.result().offset for tp, f in futures.items()}

    wait_until(
        lambda: offsets(IsolationLevel.READ_COMMITTED) == offsets(IsolationLevel.READ_UNCOMMITTED),
        timeout_s,
        f"no open transaction in {topic}",
        lambda: time.sleep(0.2),
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"drain-{uuid.uuid4()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    out: dict[int, list[tuple[bytes | None, Any]]] = {p: [] for p in partitions}
    pending = set(partitions)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])

        def step() -> None:
            message = consumer.poll(0.2)
            if message is None:
                return
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                pending.discard(message.partition())
                return
            raw = message.value()
            value = None if raw is None else json.loads(raw)  # None: a tombstone
            out[message.partition()].append((message.key(), value))

        wait_until(lambda: not pending, timeout_s, f"drain {topic}", step)
    finally:
        consumer.close()
    return [record for p in partitions for record in out[p]]


RunExample = Callable[..., None]


@pytest.fixture
def run_example(spark: SparkSession, tmp_path: Path) -> RunExample:
    """``run_example(module, bootstrap)``: one ``--available-now`` run of an example's
    ``start`` on the test's checkpoint (the same directory on every call)."""
    from riverbed.pipelines.examples import ExampleOptions

    def run(module: Any, bootstrap: str, **extra: Any) -> None:
        options = ExampleOptions(bootstrap, tmp_path / "checkpoint", available_now=True, **extra)
        for query in module.start(spark, options):
            assert query.awaitTermination(300), "query did not finish"
            assert query.exception() is None, query.exception()

    return run


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """This folder's ``pipeline_cli`` tests (a JVM per child run, minutes) and
    ``time_examples`` tests (the operator examples on Spark, 1-2 min each) run only when
    selected with ``-m pipeline_cli`` / ``-m time_examples``."""
    selected = config.getoption("markexpr") or ""
    here = Path(__file__).parent
    for marker, why in (
        ("pipeline_cli", "riverbed pipeline run subprocesses: select with -m pipeline_cli"),
        ("time_examples", "operator examples on Spark (minutes): select with -m time_examples"),
    ):
        if marker in selected:
            continue
        skip = pytest.mark.skip(reason=why)
        for item in items:
            if marker in item.keywords and here in Path(str(item.fspath)).parents:
                item.add_marker(skip)
