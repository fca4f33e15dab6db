"""Page views per user per hour: the first Riverbed pipeline, on Spark Structured Streaming.

Input: a topic of page views (see :mod:`riverbed.demo.clickstream`): key ``user_id``,
value JSON ``{"user_id", "url", "event_time"}`` with event time in epoch ms.

Per micro-batch, inside ``foreachBatch`` (see docs/pipeline.md for the timeline)::

    rows --parse--> malformed ---------------------------------> side output + counter
          |
          +-- event_time <= watermark ------------------------> side output + counter
          +-- event_time >  watermark --> window() 1 h          -> tumbling counts  \
                                      --> window() 1 h / 15 min -> hopping counts    > facts
    max(event_time) ---------------------------------------------> next watermark   /

* The watermark is Spark's: max event time seen in *earlier* batches minus
  ``allowed_delay_ms``.  Spark's own ``withWatermark`` aggregation drops rows behind it
  without a trace; here they are counted (``late`` facts) and written to ``late_topic``
  with a header saying why.  A row is counted in all its windows or in none.
* Facts (window count deltas, straggler counts, progress) go to SQLite in one transaction
  keyed by (query id, batch id) -- :class:`~riverbed.pipelines.pageviews_store.PageviewStore`;
  the per-user-per-hour table is a view summing them.  Exactly-once in the table.
* Then the new totals of every window the batch touched go to ``output_topic`` (key
  user_id, value JSON with ``window``, ``window_start``, ``window_end``, ``count``): an
  upsert stream, at-least-once -- a replayed batch re-emits identical totals.

Crash behaviour: Spark replays an uncommitted batch with the same id and rows; the store
skips its facts but the topics are written again (duplicates in ``late_topic`` carry the
same ``riverbed.source`` header ``topic/partition/offset`` to deduplicate on).

The pipeline reaches brokers only through the ``riverbed`` Spark format and
confluent-kafka, so it runs unchanged against any Kafka cluster.  ``python -m
riverbed.pipelines.pageviews --help`` runs it as a standalone driver.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import LongType, StringType, StructField, StructType

from riverbed.pipelines.pageviews_store import FACTS_SCHEMA, PageviewStore, WindowCount
from riverbed.spark.idempotent import streaming_query_id
from riverbed.spark.options import parse_sink_options
from riverbed.spark.schema import HEADERS_TYPE
from riverbed.spark.sink import produce_batches

HOUR_MS = 3_600_000
PAGEVIEW_JSON = StructType(
    [
        StructField("user_id", StringType()),
        StructField("url", StringType()),
        StructField("event_time", LongType()),
    ]
)
REASON_HEADER = "riverbed.reason"
SOURCE_HEADER = "riverbed.source"


@dataclass(frozen=True, slots=True)
class PageviewConfig:
    """Where the pipeline reads, writes and keeps its state."""

    bootstrap_servers: str
    database: Path
    checkpoint: Path
    input_topic: str = "pageviews"
    output_topic: str = "pageviews-per-user-hour"
    late_topic: str = "pageviews-late"
    allowed_delay_ms: int = 10 * 60_000
    window_ms: int = HOUR_MS
    slide_ms: int = 15 * 60_000
    max_offsets_per_trigger: int | None = None
    starting_offsets: str = "earliest"
    kafka_params: Mapping[str, str] = field(default_factory=dict)

    def source_options(self) -> dict[str, str]:
        options = {f"kafka.{k}": v for k, v in self.kafka_params.items()}
        options.update(
            {
                "kafka.bootstrap.servers": self.bootstrap_servers,
                "subscribe": self.input_topic,
                "startingOffsets": self.starting_offsets,
            }
        )
        if self.max_offsets_per_trigger is not None:
            options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        return options

    def sink_options(self, topic: str) -> dict[str, str]:
        options = {f"kafka.{k}": v for k, v in self.kafka_params.items()}
        options.update({"kafka.bootstrap.servers": self.bootstrap_servers, "topic": topic})
        return options


# -- the query, as functions of DataFrames (shared by the stream and the batch job) ------


def parse_pageviews(records: DataFrame) -> DataFrame:
    """Kafka rows -> ``user_id, url, event_time_ms, event_time, malformed`` + provenance."""
    parsed = F.from_json(F.col("value").cast("string"), PAGEVIEW_JSON)
    return records.select(
        parsed["user_id"].alias("user_id"),
        parsed["url"].alias("url"),
        parsed["event_time"].alias("event_time_ms"),
        F.timestamp_millis(parsed["event_time"]).alias("event_time"),
        (parsed["user_id"].isNull() | parsed["event_time"].isNull()).alias("malformed"),
        "key",
        "value",
        "topic",
        "partition",
        "offset",
    )


def _window_column(config: PageviewConfig, kind: str) -> Column:
    width = f"{config.window_ms // 1000} seconds"
    if kind == "hopping":
        return F.window("event_time", width, f"{config.slide_ms // 1000} seconds")
    return F.window("event_time", width)


def window_counts(pageviews: DataFrame, config: PageviewConfig, kind: str) -> DataFrame:
    """``fact, user_id, window_start_ms, window_end_ms, count`` for ``kind`` windows.

    ``kind`` is ``tumbling`` (width ``window_ms``) or ``hopping`` (width ``window_ms`` every
    ``slide_ms``); ``late`` counts per tumbling window too.
    """
    return (
        pageviews.groupBy("user_id", _window_column(config, kind).alias("w"))
        .count()
        .select(
            F.lit(kind).alias("fact"),
            "user_id",
            F.unix_millis(F.col("w.start")).alias("window_start_ms"),
            F.unix_millis(F.col("w.end")).alias("window_end_ms"),
            F.col("count"),
        )
    )


def batch_facts(parsed: DataFrame, config: PageviewConfig, watermark_ms: int) -> DataFrame:
    """Every fact of one batch judged against ``watermark_ms`` (without ``batch_id``)."""
    good = parsed.filter(~F.col("malformed"))
    on_time = good.filter(F.col("event_time_ms") > watermark_ms)
    late = good.filter(F.col("event_time_ms") <= watermark_ms)
    progress = parsed.agg(
        F.lit("progress").alias("fact"),
        F.lit(None).cast("string").alias("user_id"),
        F.lit(watermark_ms).cast("long").alias("window_start_ms"),
        F.max(F.when(~F.col("malformed"), F.col("event_time_ms"))).alias("window_end_ms"),
        F.count(F.lit(1)).alias("count"),
    )
    malformed = (
        parsed.filter(F.col("malformed"))
        .agg(
            F.lit("malformed").alias("fact"),
            F.lit(None).cast("string").alias("user_id"),
            F.lit(None).cast("long").alias("window_start_ms"),
            F.lit(None).cast("long").alias("window_end_ms"),
            F.count(F.lit(1)).alias("count"),
        )
        .filter(F.col("count") > 0)
    )
    return (
        window_counts(on_time, config, "tumbling")
        .unionByName(window_counts(on_time, config, "hopping"))
        .unionByName(window_counts(late, config, "late"))
        .unionByName(malformed)
        .unionByName(progress)
    )


def side_output(parsed: DataFrame, watermark_ms: int) -> DataFrame:
    """Stragglers and malformed records, as the sink writes them, with reason headers."""
    late = F.col("malformed") | (F.col("event_time_ms") <= watermark_ms)
    reason = F.when(F.col("malformed"), F.lit("malformed")).otherwise(F.lit("late"))
    source = F.concat_ws(
        "/", "topic", F.col("partition").cast("string"), F.col("offset").cast("string")
    )
    header = F.struct(F.lit(REASON_HEADER).alias("key"), reason.cast("binary").alias("value"))
    origin = F.struct(F.lit(SOURCE_HEADER).alias("key"), source.cast("binary").alias("value"))
    headers = F.array(header, origin).cast(HEADERS_TYPE)
    return parsed.filter(late).select("key", "value", headers.alias("headers"))


# -- the streaming driver ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchStats:
    """What one micro-batch did (for progress displays)."""

    batch_id: int
    rows: int
    late: int
    malformed: int
    windows_updated: int
    watermark_ms: int
    duration_s: float
    replayed: bool


class PageviewBatchWriter:
    """The ``foreachBatch`` function.  Runs on the driver, one batch at a time.

    ``last`` and the running totals are read by other threads (progress display): each is
    replaced by one attribute assignment, never mutated in place.
    """

    def __init__(self, config: PageviewConfig, query_id: str | None = None) -> None:
        self.config = config
        self.store = PageviewStore(config.database)
        self.query_id = query_id
        self.last: BatchStats | None = None
        self.rows_in = 0
        self.records_out = 0
        self.late = 0
        self.malformed = 0
        self.batches = 0  # micro-batches this writer ran (replays included)
        self._lock = threading.Lock()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        query_id = self.query_id or streaming_query_id(df)
        replayed = self.store.is_committed(query_id, batch_id)
        # The watermark this batch is judged against: from the batches before it.
        watermark_ms = self.store.watermark_ms(self.config.allowed_delay_ms, batch_id)
        parsed = parse_pageviews(df).persist()
        try:
            if not replayed:
                facts = batch_facts(parsed, self.config, watermark_ms).toArrow()
                facts = facts.append_column(
                    "batch_id", pa.array([batch_id] * facts.num_rows, pa.int64())
                ).select(FACTS_SCHEMA.names)
                self.store.write_batch(query_id, batch_id, facts)
            judged = parsed.agg(
                F.count(F.lit(1)).alias("rows"),
                F.count(F.when(F.col("malformed"), 1)).alias("malformed"),
                F.count(F.when(F.col("event_time_ms") <= watermark_ms, 1)).alias("late"),
            ).first()
            assert judged is not None
            rows, malformed, late = (
                int(judged["rows"]),
                int(judged["malformed"]),
                int(judged["late"]),
            )
            if malformed or late:
                side_output(parsed, watermark_ms).write.format("riverbed").mode("append").options(
                    **self.config.sink_options(self.config.late_topic)
                ).save()
        finally:
            parsed.unpersist()
        totals = self.store.totals_touched_by(batch_id)
        self._emit_totals(totals)
        with self._lock:
            self.rows_in += rows
            self.records_out += len(totals) + late + malformed
            self.late += late
            self.malformed += malformed
            self.batches += 1
            self.last = BatchStats(
                batch_id,
                rows,
                late,
                malformed,
                len(totals),
                watermark_ms,
                time.monotonic() - started,
                replayed,
            )

    def _emit_totals(self, totals: list[tuple[str, WindowCount]]) -> None:
        if not totals:
            return
        keys = [t.user_id.encode() for _, t in totals]
        values = [
            json.dumps(
                {
                    "window": kind,
                    "user_id": t.user_id,
                    "window_start": t.window_start_ms,
                    "window_end": t.window_end_ms,
                    "count": t.count,
                },
                separators=(",", ":"),
            ).encode()
            for kind, t in totals
        ]
        batch = pa.record_batch(
            {"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())}
        )
        options = parse_sink_options(self.config.sink_options(self.config.output_topic))
        produce_batches(options, iter([batch]))


def start_pageviews_query(
    spark: SparkSession,
    config: PageviewConfig,
    *,
    available_now: bool = False,
    processing_time: str | None = None,
    query_name: str = "pageviews_per_user_hour",
) -> tuple[StreamingQuery, PageviewBatchWriter]:
    """Start the streaming query; the caller owns it (``stop()``/``awaitTermination()``)."""
    import riverbed.spark

    riverbed.spark.register(spark)
    writer = PageviewBatchWriter(config)
    stream = spark.readStream.format("riverbed").options(**config.source_options()).load()
    builder = (
        stream.writeStream.queryName(query_name)
        .foreachBatch(writer)
        .option("checkpointLocation", str(config.checkpoint))
    )
    if available_now:
        builder = builder.trigger(availableNow=True)
    elif processing_time is not None:
        builder = builder.trigger(processingTime=processing_time)
    return builder.start(), writer


def batch_window_counts(spark: SparkSession, config: PageviewConfig, topic: str) -> DataFrame:
    """The same windowed counts as a Spark *batch* job over all of ``topic`` (no watermark)."""
    import riverbed.spark

    riverbed.spark.register(spark)
    records = (
        spark.read.format("riverbed")
        .options(**{**config.source_options(), "subscribe": topic})
        .load()
    )
    pageviews = parse_pageviews(records).filter(~F.col("malformed"))
    return window_counts(pageviews, config, "tumbling").unionByName(
        window_counts(pageviews, config, "hopping")
    )


def local_spark(
    app_name: str = "riverbed-pageviews", extra: Mapping[str, str] | None = None
) -> SparkSession:
    """A ``local[2]`` session configured as on our 2-core machines (see FIELD-NOTES)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m riverbed.pipelines.pageviews",
        description="Run the page-views-per-user-per-hour pipeline until the topic is drained.",
    )
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--database", required=True, type=Path)
    parser.add_argument("--checkpoint", required=True, type=Path)
    parser.add_argument("--input-topic", default="pageviews")
    parser.add_argument("--output-topic", default="pageviews-per-user-hour")
    parser.add_argument("--late-topic", default="pageviews-late")
    parser.add_argument("--allowed-delay-ms", type=int, default=10 * 60_000)
    parser.add_argument("--max-offsets-per-trigger", type=int)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Drain the input topic once (``availableNow``) and exit 0; used by crash tests."""
    args = _arguments(argv)
    config = PageviewConfig(
        bootstrap_servers=args.bootstrap_servers,
        database=args.database,
        checkpoint=args.checkpoint,
        input_topic=args.input_topic,
        output_topic=args.output_topic,
        late_topic=args.late_topic,
        allowed_delay_ms=args.allowed_delay_ms,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
    )
    spark = local_spark()
    try:
        query, _ = start_pageviews_query(spark, config, available_now=True)
        query.awaitTermination()
        error = query.exception()
        if error is not None:
            print(f"pageviews: query failed: {error}", file=sys.stderr)
            return 1
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
