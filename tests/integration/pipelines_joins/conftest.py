"""Fixtures of the join example tests (search-clicks, enrich, timeline).

A ``riverbed broker`` child process per test (the examples' topic names are fixed), one
local SparkSession per test process with the runner's settings (RocksDB state store), and
helpers to produce records in a given arrival order and drain a topic (tombstones
included).  ``run_example`` runs an example's ``start`` in this process with
``availableNow`` (what ``riverbed pipeline run --available-now`` does, without a JVM start
per run); test_pipeline_cli.py runs the real command.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pyspark.sql import SparkSession

from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until

Record = tuple[Any, Any]
"""(key, value): JSON-ready Python values, or str/bytes sent as they are; None = null."""


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from riverbed.cli.pipeline_command import SPARK_CONFIG
    from riverbed.spark.session import local_session

    session = local_session("riverbed-join-tests", config=SPARK_CONFIG)
    yield session
    session.stop()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        tmp_path / "broker", free_port(), tmp_path / "broker.log", {"num.partitions": "2"}
    )
    process.start(timeout_s=180)
    try:
        yield process
    finally:
        process.close()


def create_topics(bootstrap: str, names: Sequence[str], partitions: int = 2, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    settings = {"retention.ms": "-1", **config}
    wanted = [NewTopic(n, partitions, 1, config=settings) for n in names]
    for future in admin.create_topics(wanted).values():
        future.result(60)


def _encode(part: Any) -> bytes | None:
    if part is None or isinstance(part, bytes):
        return part
    if isinstance(part, str):
        return part.encode()
    return json.dumps(part, separators=(",", ":")).encode()


def produce(bootstrap: str, topic: str, records: Sequence[Record]) -> None:
    """Produce ``records`` in this order (keyed records land by key hash)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, key=_encode(key), value=_encode(value))
    assert producer.flush(60) == 0


def drain(bootstrap: str, topic: str, timeout_s: float = 60) -> list[tuple[bytes | None, Any]]:
    """Every committed record of ``topic`` up to its high watermarks (read_committed),
    per partition in offset order: ``(key bytes, parsed JSON value or None for a
    tombstone)``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"drain-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
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
                    raw = message.value()
                    out.append((message.key(), None if raw is None else json.loads(raw)))
            # the position passes transaction markers, which are never delivered
            for tp in consumer.position([TopicPartition(topic, p) for p in partitions]):
                if tp.offset >= 0:
                    position[tp.partition] = max(position[tp.partition], tp.offset)

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
    """``run_example(name, bootstrap, **options)``: one ``--available-now`` run of the
    example on the test's checkpoint (the same directory on every call), its topics
    created first as the runner does."""
    from riverbed.cli.pipeline_command import ensure_topics, input_topic_config
    from riverbed.pipelines.examples import ExampleOptions, example_module

    def run(name: str, bootstrap: str, **extra: Any) -> None:
        module = example_module(name)
        options = ExampleOptions(bootstrap, tmp_path / "checkpoint", available_now=True, **extra)
        topics = {t: input_topic_config(t, options) for t in module.INPUT_TOPICS(options)}
        ensure_topics(bootstrap, {**topics, **module.OUTPUT_TOPICS(options)})
        for query in module.start(spark, options):
            assert query.awaitTermination(600), "query did not finish"
            assert query.exception() is None, query.exception()

    return run


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``pipeline_cli`` tests (a JVM start per child run, minutes) run only when selected
    with ``-m pipeline_cli``."""
    if "pipeline_cli" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="child-process runs: select with -m pipeline_cli")
    for item in items:
        if "pipeline_cli" in item.keywords:
            item.add_marker(skip)
