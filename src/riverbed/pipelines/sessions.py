"""The ``sessions`` example: page views -> per-user sessions by a 30 min inactivity gap.

Contract (``riverbed pipeline run sessions``; docs/time-and-patterns.md):

* input topic ``pageviews``: JSON ``{"user_id": str, "url": str, "ts": epoch ms}``;
* output topic ``sessions``, key ``user_id`` (plain text), value JSON with exactly
  ``{"user_id", "session_start", "session_end", "views", "urls"}``: ``session_start`` /
  ``session_end`` the first / last view's ``ts``, ``views`` the number of views, ``urls``
  in event-time order (ties in ``ts`` broken by ``url``);
* a view at most ``GAP_MS`` (30 min) after the user's previous view (in event time)
  continues the session -- a gap of exactly 30 min too; more starts a new session;
* each session is emitted once, final, when the watermark (max event time seen in earlier
  micro-batches minus 10 min 1 ms: a view exactly 10 min late is kept) reaches
  ``session_end + 30 min``.

It is Spark's own ``session_window`` aggregation in append mode: each view opens the
window ``[ts, ts + gap)``; windows that overlap *or touch* merge (Spark's
``MergingSessionsIterator`` starts a new session only when ``end < next start``).  State
(the open sessions per user) lives in the query's state store under
``<checkpoint>/sessions``; a restart resumes from it and from the offset log.

Records that are not a JSON object with a string ``user_id`` and an integer ``ts`` are
skipped.  A view up to exactly 10 min behind the max ``ts`` of earlier micro-batches is
always used.  Spark drops a view only when its own session window has ended at the
watermark when it arrives (``ts + 30 min <= W``, measured: the input of a
``session_window`` aggregation is filtered by window end, not by ``ts``), so a view more
than 10 min late may still be counted -- beyond the contract, it may then form a
session of its own instead of joining one already emitted.  Emission needs a
micro-batch *after* the one that moved the watermark: Spark runs a no-data batch for it,
with ``availableNow`` too (see the docs).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import LongType, StringType, StructField, StructType

from riverbed.pipelines.examples import WATERMARK_DELAY, ExampleOptions
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "page views -> per-user sessions (30 min inactivity gap, session_window)"
INPUT_TOPIC = "pageviews"
OUTPUT_TOPIC = "sessions"
QUERY_NAME = "sessions"
GAP = "30 minutes"
GAP_MS = 30 * 60 * 1000

PAGEVIEW_JSON = StructType(
    [
        StructField("user_id", StringType()),
        StructField("url", StringType()),
        StructField("ts", LongType()),
    ]
)


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [INPUT_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {OUTPUT_TOPIC: {}}


def parse_pageviews(records: DataFrame) -> DataFrame:
    """Kafka rows -> ``user_id, url, ts, event_time`` (malformed rows skipped)."""
    view = F.from_json(F.col("value").cast("string"), PAGEVIEW_JSON).alias("v")
    return (
        records.select(view)
        .select("v.user_id", "v.url", "v.ts")
        .filter(F.col("user_id").isNotNull() & F.col("ts").isNotNull())
        .withColumn("event_time", F.timestamp_millis("ts"))
    )


def sessionize(pageviews: DataFrame, gap: str = GAP) -> DataFrame:
    """``user_id, session_start, session_end, views, urls`` per session of ``pageviews``.

    Works on a batch DataFrame too (then every session is final at once); on a stream the
    caller sets the watermark on ``event_time`` first.
    """
    ordered = F.array_sort(F.collect_list(F.struct("ts", "url")))
    sessions = pageviews.groupBy(
        "user_id", F.session_window("event_time", gap).alias("session")
    ).agg(
        F.min("ts").alias("session_start"),
        F.max("ts").alias("session_end"),
        F.count(F.lit(1)).alias("views"),
        ordered.alias("ordered"),
    )
    urls: Column = F.transform("ordered", lambda view: view["url"])
    return sessions.select("user_id", "session_start", "session_end", "views", urls.alias("urls"))


def session_records(sessions: DataFrame) -> DataFrame:
    """Sessions -> the sink's ``key, value`` (JSON, null fields kept)."""
    value = F.to_json(
        F.struct("user_id", "session_start", "session_end", "views", "urls"),
        {"ignoreNullFields": "false"},
    )
    return sessions.select(F.col("user_id").alias("key"), value.alias("value"))


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start the ``sessions`` query (checkpoint ``<checkpoint>/sessions``)."""
    views = parse_pageviews(read_topics(spark, options, [INPUT_TOPIC]))
    watermarked = views.withWatermark("event_time", WATERMARK_DELAY)
    records = session_records(sessionize(watermarked))
    return [write_topic(records, options, OUTPUT_TOPIC, QUERY_NAME, output_mode="append")]
