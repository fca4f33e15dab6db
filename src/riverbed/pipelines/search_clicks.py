"""``search-clicks``: searches left-outer-joined with the clicks on their results within
30 minutes of event time -- Spark's own stream-stream join with watermarks.

In:  ``searches`` ``{search_id, user_id, query, ts}``, ``clicks`` ``{search_id, url, ts}``.
Out: ``search-clicks``, key ``search_id`` as plain text, value (fields in this order)::

    {"search_id", "user_id", "query", "clicked": true,  "url", "search_ts", "click_ts"}
    {"search_id", "user_id", "query", "clicked": false, "url": null, "search_ts",
     "click_ts": null}

One ``clicked: true`` record per (search, click) pair with the same ``search_id`` and
``search_ts <= click_ts <= search_ts + 30 min`` (both bounds inclusive; a search with
several such clicks gets several records).  One ``clicked: false`` record for a search with
none, emitted once Spark's watermark has passed the search's window end -- then no click
that matches can still arrive, because inputs are at most 10 minutes out of order (see
docs/joins.md for the exact moment and the timeline).  ``search_id``, ``user_id``,
``query`` and ``url`` keep their JSON types (through VARIANT); ``ts`` must be an integer.

Records that are not JSON objects, or lack ``search_id`` or ``ts``, are dropped.

Late rows: the watermark delay is 10 minutes and 1 ms (``JOIN_WATERMARK_DELAY``), so the
watermark ``W`` is min over the inputs of (max ``ts`` read) - 10 min - 1 ms and Spark drops
input rows with ``ts <= W``: a row up to exactly 10 minutes behind the slower input's
maximum is joined, one 10 minutes and 1 ms behind is dropped (a late click is not joined,
a late search produces nothing).

State (Spark's join state, in RocksDB): the searches and clicks of the last ~40 minutes of
event time behind the watermark.  Output goes through the exactly-once sink (see
:mod:`riverbed.pipelines.example_io`): a run killed mid-batch and restarted on its
checkpoint writes each record once (read with ``isolation.level=read_committed``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from riverbed.pipelines.example_io import (
    json_object,
    long_field,
    parsed_value,
    raw_field,
    read_topics,
    text_field,
    write_topic,
)
from riverbed.pipelines.examples import JOIN_WATERMARK_DELAY, ExampleOptions

DESCRIPTION = "searches left-outer-joined with clicks within 30 min (stream-stream join)"
SEARCHES = "searches"
CLICKS = "clicks"
OUTPUT = "search-clicks"
WINDOW = "30 minutes"
WINDOW_MS = 30 * 60 * 1000
QUERY_NAME = "search-clicks"


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [SEARCHES, CLICKS]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {OUTPUT: {}}


def searches_of(records: DataFrame) -> DataFrame:
    """``searches`` records -> ``s_key, s_id, user_id, query, search_ts, search_time``."""
    v = parsed_value(records)
    return records.select(
        text_field(v, "$.search_id").alias("s_key"),
        raw_field(v, "$.search_id").alias("s_id"),
        raw_field(v, "$.user_id").alias("user_id"),
        raw_field(v, "$.query").alias("query"),
        long_field(v, "$.ts").alias("search_ts"),
    ).where(F.col("s_key").isNotNull() & F.col("search_ts").isNotNull())


def clicks_of(records: DataFrame) -> DataFrame:
    """``clicks`` records -> ``c_key, url, click_ts, click_time``."""
    v = parsed_value(records)
    return records.select(
        text_field(v, "$.search_id").alias("c_key"),
        raw_field(v, "$.url").alias("url"),
        long_field(v, "$.ts").alias("click_ts"),
    ).where(F.col("c_key").isNotNull() & F.col("click_ts").isNotNull())


def join(searches: DataFrame, clicks: DataFrame) -> DataFrame:
    """The left-outer time-range join, as ``key``, ``value`` (JSON text) rows.

    Works on streams (with watermarks) and, for checking, on static DataFrames.
    """
    searches = searches.withColumn("search_time", F.timestamp_millis("search_ts"))
    clicks = clicks.withColumn("click_time", F.timestamp_millis("click_ts"))
    if searches.isStreaming:
        searches = searches.withWatermark("search_time", JOIN_WATERMARK_DELAY)
        clicks = clicks.withWatermark("click_time", JOIN_WATERMARK_DELAY)
    condition = (
        (F.col("c_key") == F.col("s_key"))
        & (F.col("click_time") >= F.col("search_time"))
        & (F.col("click_time") <= F.col("search_time") + F.expr(f"INTERVAL {WINDOW}"))
    )
    joined = searches.join(clicks, condition, "leftOuter")
    clicked = F.col("click_ts").isNotNull()
    value = json_object(
        [
            ("search_id", F.col("s_id")),
            ("user_id", F.col("user_id")),
            ("query", F.col("query")),
            ("clicked", clicked),
            ("url", F.when(clicked, F.col("url"))),
            ("search_ts", F.col("search_ts")),
            ("click_ts", F.col("click_ts")),
        ]
    )
    return joined.select(F.col("s_key").alias("key"), value.alias("value"))


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start the one query (checkpoint ``<checkpoint>/search-clicks``)."""
    searches = searches_of(read_topics(spark, options, [SEARCHES]))
    clicks = clicks_of(read_topics(spark, options, [CLICKS]))
    return [write_topic(join(searches, clicks), options, OUTPUT, QUERY_NAME)]
