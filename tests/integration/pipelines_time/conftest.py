"""Fixtures of the sessions / fraud example tests: a ``riverbed broker`` child process per
test (the examples' topic names are fixed), one local SparkSession per test process with
the runner's settings (RocksDB state store), and helpers to produce and drain topics."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
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


def drain(bootstrap: str, topic: str, timeout_s: float = 60) -> list[tuple[bytes | None, Any]]:
    """Every record of ``topic`` up to its high watermarks: ``(key, parsed value)``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"drain-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions if ends[p] > 0])
        position = dict.fromkeys(partitions, 0)
        out: list[tuple[bytes | None, Any]] = []

        def step() -> None:
            for message in consumer.consume(500, 0.2):
                assert message.error() is None, message.error()
                p, offset = message.partition(), message.offset()
                if offset < ends[p]:
                    out.append((message.key(), json.loads(message.value())))
                position[p] = max(position[p], offset + 1)

        wait_until(
            lambda: all(position[p] >= ends[p] for p in partitions),
            timeout_s,
            f"drain {topic}",
            step,
        )
        return out
    finally:
        consumer.close()


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
