"""The riverbed sink and the idempotent foreachBatch helpers, through real Spark."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from pyspark.sql import DataFrame, SparkSession

from riverbed.spark import IdempotentSQLiteSink

from .conftest import produce


def _read(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> DataFrame:
    return (
        spark.read.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .options(**options)
        .load()
    )


def test_batch_and_stream_sink_round_trip(
    spark: SparkSession, bootstrap: str, topic: Callable[[int], str], tmp_path: Path
) -> None:
    target = topic(2)
    rows = [(f"k{i}", f"v{i}".encode(), target, i % 2, [("h", f"{i}".encode())]) for i in range(10)]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, topic string, partition int, "
        "headers array<struct<key:string,value:binary>>",
    )
    df.write.format("riverbed").mode("append").option("kafka.bootstrap.servers", bootstrap).save()
    back = _read(spark, bootstrap, target, includeHeaders="true").collect()
    assert sorted((r["key"], r["value"], r["partition"]) for r in back) == sorted(
        (k.encode(), v, p) for k, v, _, p, _ in rows
    )
    assert all(r["headers"][0]["value"] == r["key"][1:] for r in back)

    # Stream: copy the topic into another one, naming it with the topic option.
    copy = topic(1)
    stream = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", target)
        .option("startingOffsets", "earliest")
        .load()
        .select("key", "value")
    )
    query = (
        stream.writeStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", copy)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    copied = _read(spark, bootstrap, copy).collect()
    assert sorted((r["key"], r["value"]) for r in copied) == sorted(
        (k.encode(), v) for k, v, _, _, _ in rows
    )


def test_sink_refuses_a_frame_without_value(spark: SparkSession, bootstrap: str) -> None:
    df = spark.createDataFrame([("a",)], "key string")
    with pytest.raises(Exception, match="'value' column is required"):
        df.write.format("riverbed").mode("append").option(
            "kafka.bootstrap.servers", bootstrap
        ).option("topic", "x").save()


def test_idempotent_sqlite_sink_ignores_a_replayed_batch(
    spark: SparkSession, bootstrap: str, topic: Callable[[int], str], tmp_path: Path
) -> None:
    name = topic(2)
    produce(bootstrap, name, [(i % 2, None, f"v{i}".encode()) for i in range(12)])
    database = tmp_path / "derived.db"
    sink = IdempotentSQLiteSink(database, "events")
    stream = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "5")
        .load()
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
    )
    query = (
        stream.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None

    def table() -> list[tuple[object, ...]]:
        with sqlite3.connect(database) as conn:
            return sorted(conn.execute("SELECT partition, offset, value FROM events"))

    def markers() -> list[tuple[object, ...]]:
        with sqlite3.connect(database) as conn:
            return sorted(conn.execute("SELECT * FROM riverbed_batches"))

    assert len(table()) == 12
    assert [m[0] for m in markers()] == [str(query.id)] * 3
    before = table(), markers()
    # Replay batch 1 with different rows (as a crashed-and-rerun batch would arrive again).
    replay = pa.table({"partition": [0], "offset": [99], "value": ["dup"]})
    assert sink.write_batch(str(query.id), 1, replay) is False
    assert (table(), markers()) == before
    # A new batch id is written, once.
    assert sink.write_batch(str(query.id), 3, replay) is True
    assert sink.write_batch(str(query.id), 3, replay) is False
    assert len(table()) == 13
