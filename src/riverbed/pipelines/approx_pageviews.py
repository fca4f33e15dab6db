"""The ``approx-pageviews`` example: approximate analytics per 5-minute window of page views.

Contract (``riverbed pipeline run approx-pageviews``; docs/time-and-patterns.md):

* input topic ``pageviews``: JSON ``{"user_id": str, "url": str, "ts": epoch ms,
  "load_ms": int}`` (``load_ms``, the page's load time, may be missing or null: such a
  view counts everywhere but in the percentiles);
* output topic ``pageview-stats``, key ``window_start`` (decimal text), value JSON with
  exactly ``{"window_start", "window_end", "views", "distinct_users", "p50_load_ms",
  "p99_load_ms"}``: per tumbling window ``[window_start, window_end)`` of 5 min (epoch
  ms, starts multiples of 5 min), ``views`` exact, ``distinct_users`` Spark's HLL++
  (``approx_count_distinct``, relative standard error 5 %), ``p50/p99_load_ms`` Spark's
  ``percentile_approx`` at accuracy 1000 (rank within ``views / 1000`` of the exact
  rank; null when no view of the window has a ``load_ms``);
* output topic ``top-urls``, key ``window_start``, value JSON with exactly
  ``{"window_start", "window_end", "views", "top", "max_undercount"}``: ``top`` the
  :data:`TOP_K` most viewed urls ``[{"url", "views"}, ...]`` (largest first, ties by
  url) from a Misra-Gries summary of :data:`CAPACITY` counters kept in state per window
  (:func:`riverbed.pipelines.approx.windowed_top_k`): each ``views`` is at most
  ``max_undercount = floor(views / 51)`` below the url's true count (exact while a
  window has at most 50 distinct urls).

Both outputs are final, one record per window, emitted when the watermark (max ``ts`` of
earlier micro-batches - 10 min - 1 ms) reaches the window's end; a view up to exactly
10 min late is counted in both.  A view at or behind the watermark when it arrives is
dropped by ``windowed_top_k``, but Spark's stats aggregation drops it only once its
window has ended at the watermark (``window_end <= W``, measured), so a view more than
10 min late (outside the contract) may be counted in the stats only.  Two queries on the input,
state under ``<checkpoint>/pageview-stats`` and ``<checkpoint>/top-urls``.  Records
that are not a JSON object with a string ``user_id`` and an integer ``ts`` are skipped
(and a view with a null ``url`` in ``top-urls``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import LongType, StringType, StructField, StructType

from riverbed.pipelines.approx import DEFAULT_ACCURACY, DEFAULT_RSD, windowed_top_k
from riverbed.pipelines.examples import WATERMARK_DELAY, ExampleOptions
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "page views -> per 5 min window: distinct users (HLL), p50/p99 load, top urls"
INPUT_TOPIC = "pageviews"
STATS_TOPIC = "pageview-stats"
TOP_TOPIC = "top-urls"
WINDOW = "5 minutes"
WINDOW_MS = 5 * 60 * 1000
TOP_K = 5
CAPACITY = 50

PAGEVIEW_JSON = StructType(
    [
        StructField("user_id", StringType()),
        StructField("url", StringType()),
        StructField("ts", LongType()),
        StructField("load_ms", LongType()),
    ]
)


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [INPUT_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {STATS_TOPIC: {}, TOP_TOPIC: {}}


def parse_views(records: DataFrame) -> DataFrame:
    """Kafka rows -> ``user_id, url, ts, load_ms, event_time`` (malformed rows skipped)."""
    view = F.from_json(F.col("value").cast("string"), PAGEVIEW_JSON).alias("v")
    return (
        records.select(view)
        .select("v.user_id", "v.url", "v.ts", "v.load_ms")
        .filter(F.col("user_id").isNotNull() & F.col("ts").isNotNull())
        .withColumn("event_time", F.timestamp_millis("ts"))
    )


def window_stats(views: DataFrame) -> DataFrame:
    """``window_start, window_end, views, distinct_users, p50_load_ms, p99_load_ms`` per
    5 min window of ``views`` (a batch, or a watermarked stream in append mode)."""
    percentiles = F.percentile_approx("load_ms", [0.5, 0.99], DEFAULT_ACCURACY)
    stats = views.groupBy(F.window("event_time", WINDOW).alias("w")).agg(
        F.count(F.lit(1)).alias("views"),
        F.approx_count_distinct("user_id", DEFAULT_RSD).alias("distinct_users"),
        percentiles.alias("p"),
    )
    return stats.select(
        F.unix_millis(F.col("w.start")).alias("window_start"),
        F.unix_millis(F.col("w.end")).alias("window_end"),
        "views",
        "distinct_users",
        F.col("p")[0].alias("p50_load_ms"),
        F.col("p")[1].alias("p99_load_ms"),
    )


def stats_records(stats: DataFrame) -> DataFrame:
    fields = ["window_start", "window_end", "views", "distinct_users"]
    value = F.to_json(
        F.struct(*fields, "p50_load_ms", "p99_load_ms"), {"ignoreNullFields": "false"}
    )
    return stats.select(F.col("window_start").cast("string").alias("key"), value.alias("value"))


def top_records(top: DataFrame) -> DataFrame:
    """:data:`~riverbed.pipelines.approx.TOP_K_SCHEMA` rows -> the ``top-urls`` records."""
    entries = F.from_json("top", "array<struct<item: string, count: long>>")
    urls = F.transform(
        entries, lambda e: F.struct(e["item"].alias("url"), e["count"].alias("views"))
    )
    value = F.to_json(
        F.struct("window_start", "window_end", "views", urls.alias("top"), "max_undercount"),
        {"ignoreNullFields": "false"},
    )
    return top.select(F.col("window_start").cast("string").alias("key"), value.alias("value"))


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start ``pageview-stats`` and ``top-urls`` (checkpoints under those names)."""
    stats_views = parse_views(read_topics(spark, options, [INPUT_TOPIC]))
    stats = window_stats(stats_views.withWatermark("event_time", WATERMARK_DELAY))
    top_views = parse_views(read_topics(spark, options, [INPUT_TOPIC]))
    top = windowed_top_k(
        top_views.withWatermark("event_time", WATERMARK_DELAY),
        "event_time",
        "url",
        WINDOW_MS,
        TOP_K,
        CAPACITY,
    )
    return [
        write_topic(stats_records(stats), options, STATS_TOPIC, STATS_TOPIC),
        write_topic(top_records(top), options, TOP_TOPIC, TOP_TOPIC),
    ]
