"""The riverbed source against Riverbed's broker (embedded), through real Spark (local[2])."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from .conftest import produce, wait_until

Rows = list[tuple[str, int, int, bytes | None, bytes | None]]


def _rows(df: DataFrame) -> Rows:
    return sorted(
        (r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in df.collect()
    )


def _expected(topic: str, records: list[tuple[int, bytes | None, bytes | None]]) -> Rows:
    next_offset: dict[int, int] = {}
    out: Rows = []
    for partition, key, value in records:
        offset = next_offset.get(partition, 0)
        next_offset[partition] = offset + 1
        out.append((topic, partition, offset, key, value))
    return sorted(out)


def _records(n: int, partitions: int) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(i % partitions, f"k{i}".encode(), f"v{i}".encode()) for i in range(n)]


def _stream(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    return (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**options)
        .load()
    )


def _run_available_now(
    df: DataFrame, checkpoint: Path, table: str, spark: SparkSession
) -> StreamingQuery:
    query = (
        df.writeStream.format("memory")
        .queryName(table)
        .option("checkpointLocation", str(checkpoint))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "availableNow query did not finish"
    assert query.exception() is None
    return query


def test_batch_read_equals_what_was_produced(
    spark: SparkSession, bootstrap: str, topic: Callable[[int], str]
) -> None:
    name = topic(3)
    records = _records(30, 3)
    produce(bootstrap, name, records, timestamp_ms=1_700_000_000_000, headers=[("h", b"x")])
    df = (
        spark.read.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("includeHeaders", "true")
        .load()
    )
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = df.collect()
    assert _rows(df) == _expected(name, records)
    first = rows[0]
    assert first["timestampType"] == 0
    assert int(first["timestamp"].timestamp() * 1000) == 1_700_000_000_000
    assert [(h["key"], h["value"]) for h in first["headers"]] == [("h", b"x")]
    # Per-partition JSON offsets, with the -2 (earliest) sentinel, bound the range.
    sliced = (
        spark.read.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", json.dumps({name: {"0": 2, "1": -2, "2": 9}}))
        .option("endingOffsets", json.dumps({name: {"0": 5, "1": 1, "2": -1}}))
        .load()
    )
    assert [(p, o) for _, p, o, _, _ in _rows(sliced)] == [(0, 2), (0, 3), (0, 4), (1, 0), (2, 9)]


def test_stream_reads_everything_with_max_offsets_per_trigger(
    spark: SparkSession, bootstrap: str, topic: Callable[[int], str], tmp_path: Path
) -> None:
    name = topic(2)
    records = _records(50, 2)
    produce(bootstrap, name, records)
    df = _stream(
        spark, bootstrap, subscribe=name, startingOffsets="earliest", maxOffsetsPerTrigger="20"
    )
    query = _run_available_now(df, tmp_path / "cp", "limited", spark)
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sizes == [20, 20, 10]
    assert _rows(spark.table("limited")) == _expected(name, records)


def test_restart_from_checkpoint_resumes_without_loss_or_duplication(
    spark: SparkSession, bootstrap: str, topic: Callable[[int], str], tmp_path: Path
) -> None:
    name = topic(2)
    first, second = _records(20, 2), _records(20, 2)
    second = [(p, k, b"second-" + (v or b"")) for p, k, v in second]
    produce(bootstrap, name, first)
    df = _stream(spark, bootstrap, subscribe=name, startingOffsets="earliest")
    out = str(tmp_path / "out")

    def run() -> StreamingQuery:
        query = (
            df.writeStream.format("parquet")
            .option("path", out)
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)
        assert query.exception() is None
        return query

    run()
    assert len(spark.read.parquet(out).collect()) == 20
    produce(bootstrap, name, second)
    query = run()
    assert sum(p["numInputRows"] for p in query.recentProgress) == 20
    assert _rows(spark.read.parquet(out)) == _expected(name, first + second)


def test_new_topic_matching_pattern_is_picked_up_mid_query(
    spark: SparkSession,
    bootstrap: str,
    admin: AdminClient,
    topic: Callable[[int], str],
    tmp_path: Path,
) -> None:
    prefix = topic(1)
    produce(bootstrap, prefix, [(0, b"a", b"1")])
    df = _stream(spark, bootstrap, subscribePattern=f"{prefix}.*", startingOffsets="latest")
    query = (
        df.writeStream.format("memory")
        .queryName("growing")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        wait_until(lambda: query.lastProgress is not None, "first micro-batch")
        produce(bootstrap, prefix, [(0, b"b", b"2")])
        wait_until(lambda: spark.table("growing").count() == 1, "record after start")
        added = f"{prefix}-added"
        admin.create_topics([NewTopic(added, 2, 1)])[added].result(30)
        records = _records(6, 2)
        produce(bootstrap, added, records)
        wait_until(lambda: spark.table("growing").count() == 7, "records of the new topic")
        assert query.exception() is None
    finally:
        query.stop()
    rows = _rows(spark.table("growing"))
    assert rows == sorted([(prefix, 0, 1, b"b", b"2"), *_expected(added, records)])
