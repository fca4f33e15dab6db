"""Source features a librdkafka mock cluster cannot show, against Riverbed's broker.

* CreatePartitions under a running query: the new partitions are read from offset 0 in a
  later micro-batch (Spark's Kafka source does the same).
* ListOffsets by timestamp: startingTimestamp / startingOffsetsByTimestamp /
  endingTimestamp resolve to the first offset whose timestamp is >= the one given.
* failOnDataLoss: records deleted (DeleteRecords) between two micro-batches of a running
  query fail it naming the lost range, or are skipped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions  # type: ignore[attr-defined]
from pyspark.sql import DataFrame, SparkSession

from .conftest import produce, wait_until

BASE_MS = 1_700_000_000_000


def _offsets(df: DataFrame) -> list[tuple[int, int]]:
    return sorted((r["partition"], r["offset"]) for r in df.collect())


def test_partition_added_mid_query_is_read_from_earliest(
    spark: SparkSession,
    bootstrap: str,
    admin: AdminClient,
    topic: Callable[[int], str],
    tmp_path: Path,
) -> None:
    name = topic(1)
    query = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "latest")
        .load()
        .writeStream.format("memory")
        .queryName("repartitioned")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_until(lambda: query.lastProgress is not None, "first micro-batch")
        produce(bootstrap, name, [(0, b"a", b"0")])
        wait_until(lambda: spark.table("repartitioned").count() == 1, "record in partition 0")
        admin.create_partitions([NewPartitions(name, 3)])[name].result(30)
        produce(bootstrap, name, [(1, b"b", b"1"), (2, b"c", b"2"), (2, b"d", b"3")])
        wait_until(lambda: spark.table("repartitioned").count() == 4, "new partitions' records")
        assert query.exception() is None
        progress = [p for p in query.recentProgress if p["numInputRows"]]
    finally:
        query.stop()
    # Offset 0 of each new partition: read from earliest, not from "latest" at discovery.
    assert _offsets(spark.table("repartitioned")) == [(0, 0), (1, 0), (2, 0), (2, 1)]
    first_end = json.loads(progress[0]["sources"][0]["endOffset"])
    last_end = json.loads(progress[-1]["sources"][0]["endOffset"])
    assert first_end == {name: {"0": 1}}
    assert last_end == {name: {"0": 1, "1": 1, "2": 2}}


def _produce_at(bootstrap: str, topic: str, records: list[tuple[int, int]]) -> None:
    """Produce one record per ``(partition, timestamp_ms)``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for partition, timestamp_ms in records:
        producer.produce(
            topic, value=b"%d" % timestamp_ms, partition=partition, timestamp=timestamp_ms
        )
    assert producer.flush(30) == 0


def test_starting_and_ending_timestamps_resolve_to_offsets(
    spark: SparkSession, bootstrap: str, topic: Callable[[int], str], tmp_path: Path
) -> None:
    name = topic(2)
    # partition 0: offsets 0..3 at +1000..+4000; partition 1: offsets 0..2 at +1500..+3500
    _produce_at(
        bootstrap,
        name,
        [(0, BASE_MS + t) for t in (1000, 2000, 3000, 4000)]
        + [(1, BASE_MS + t) for t in (1500, 2500, 3500)],
    )

    def read(**options: str) -> DataFrame:
        return (
            spark.read.format("riverbed")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", name)
            .options(**options)
            .load()
        )

    # A timestamp equal to a record's starts at that record; between records, at the next.
    assert _offsets(read(startingTimestamp=str(BASE_MS + 2000))) == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 1),
        (1, 2),
    ]
    by_partition = json.dumps({name: {"0": BASE_MS + 3500, "1": BASE_MS + 1000}})
    assert _offsets(read(startingOffsetsByTimestamp=by_partition)) == [
        (0, 3),
        (1, 0),
        (1, 1),
        (1, 2),
    ]
    # endingTimestamp is exclusive: the first offset at or after it ends the range.
    assert _offsets(
        read(startingTimestamp=str(BASE_MS + 1500), endingTimestamp=str(BASE_MS + 3000))
    ) == [(0, 1), (1, 0), (1, 1)]
    # A stream started by timestamp begins at the same offsets.
    query = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingTimestamp", str(BASE_MS + 3000))
        .load()
        .writeStream.format("memory")
        .queryName("by_timestamp")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert _offsets(spark.table("by_timestamp")) == [(0, 2), (0, 3), (1, 2)]


class _PausingSink:
    """foreachBatch sink that holds micro-batch 0 open until the test lets it go."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.in_first_batch = threading.Event()
        self.release = threading.Event()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.offsets.extend(r["offset"] for r in batch.collect())
        if batch_id == 0:
            self.in_first_batch.set()
            assert self.release.wait(60), "test never released batch 0"


def _run_with_deletion(
    spark: SparkSession,
    bootstrap: str,
    admin: AdminClient,
    name: str,
    tmp_path: Path,
    fail_on_data_loss: bool,
) -> tuple[_PausingSink, BaseException | None]:
    """Read 10 records 4 per batch; while batch 0 ([0, 4)) runs, delete records below 8."""
    produce(bootstrap, name, [(0, None, b"v%d" % i) for i in range(10)])
    sink = _PausingSink()
    query = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "4")
        .option("failOnDataLoss", str(fail_on_data_loss).lower())
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        assert sink.in_first_batch.wait(90), "batch 0 never ran"
        deleted = admin.delete_records([KafkaTopicPartition(name, 0, 8)])
        assert next(iter(deleted.values())).result(30).low_watermark == 8
        sink.release.set()
        wait_until(
            lambda: query.exception() is not None or 9 in sink.offsets, "query to fail or finish"
        )
        return sink, query.exception()
    finally:
        sink.release.set()
        query.stop()


def test_deleted_records_fail_the_query_naming_the_lost_range(
    spark: SparkSession,
    bootstrap: str,
    admin: AdminClient,
    topic: Callable[[int], str],
    tmp_path: Path,
) -> None:
    name = topic(1)
    sink, error = _run_with_deletion(spark, bootstrap, admin, name, tmp_path, True)
    assert error is not None
    assert f"{name}-0: records [4, 8) were deleted before the query read them" in str(error)
    assert "failOnDataLoss=false" in str(error)
    assert sink.offsets == [0, 1, 2, 3]


def test_deleted_records_are_skipped_without_fail_on_data_loss(
    spark: SparkSession,
    bootstrap: str,
    admin: AdminClient,
    topic: Callable[[int], str],
    tmp_path: Path,
) -> None:
    name = topic(1)
    sink, error = _run_with_deletion(spark, bootstrap, admin, name, tmp_path, False)
    assert error is None
    assert sorted(sink.offsets) == [0, 1, 2, 3, 8, 9]
