"""The ``repartition-sessions`` example: the chapter's two-stage LinkedIn example, page
views repartitioned by user through an intermediate topic, then sessionized.

Contract (``riverbed pipeline run repartition-sessions``; docs/time-and-patterns.md):

* input topic ``pageviews``: JSON ``{"user_id": str, "url": str, "ts": epoch ms}``, keyed
  any way (e.g. by url: whatever partitioning the producers chose);
* stage one (query ``pageviews-by-user``) writes every view, unchanged in its fields
  (``{"user_id", "url", "ts"}``), to the intermediate topic ``pageviews-by-user`` keyed by
  ``user_id`` (:func:`riverbed.pipelines.repartition.repartition_through_topic`,
  exactly-once), so all of a user's views are in one partition;
* stage two (query ``sessions-by-user``) reads that topic (``read_committed``) and
  writes ``sessions-by-user``: the ``sessions`` example's contract exactly (key
  ``user_id``, value ``{"user_id", "session_start", "session_end", "views", "urls"}``,
  30 min inactivity gap, final sessions emitted once when the watermark reaches
  ``session_end + 30 min``).

Each stage is its own query with its own checkpoint (``<checkpoint>/pageviews-by-user``,
``<checkpoint>/sessions-by-user``); either can crash and resume alone.  With
``--available-now`` stage one runs to completion before stage two starts, so stage two
sees everything stage one wrote; otherwise both run side by side (stage two picks up
stage one's transactions as they commit, each micro-batch's watermark from what stage
two has read).  Malformed views are skipped by stage one.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from riverbed.pipelines.examples import WATERMARK_DELAY, ExampleOptions
from riverbed.pipelines.repartition import repartition_through_topic
from riverbed.pipelines.sessions import PAGEVIEW_JSON, parse_pageviews, session_records, sessionize
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "page views -> repartitioned by user via a topic -> sessions (two stages)"
INPUT_TOPIC = "pageviews"
INTERMEDIATE_TOPIC = "pageviews-by-user"
OUTPUT_TOPIC = "sessions-by-user"
STAGE_ONE = "pageviews-by-user"
STAGE_TWO = "sessions-by-user"
STAGE_ONE_TIMEOUT_S = 3600


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [INPUT_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {INTERMEDIATE_TOPIC: {}, OUTPUT_TOPIC: {}}


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start stage one and stage two (see the module docstring for the order)."""
    views = parse_pageviews(read_topics(spark, options, [INPUT_TOPIC])).select(
        "user_id", "url", "ts"
    )
    stage_one = repartition_through_topic(views, "user_id", INTERMEDIATE_TOPIC, options, STAGE_ONE)
    if options.available_now:
        stage_one.awaitTermination(STAGE_ONE_TIMEOUT_S)
        if stage_one.exception() is not None:
            return [stage_one]
    records = read_topics(spark, options, [INTERMEDIATE_TOPIC], read_committed=True)
    view = F.from_json(F.col("value").cast("string"), PAGEVIEW_JSON).alias("v")
    parsed = (
        records.select(view)
        .select("v.user_id", "v.url", "v.ts")
        .filter(F.col("user_id").isNotNull() & F.col("ts").isNotNull())
        .withColumn("event_time", F.timestamp_millis("ts"))
    )
    sessions = sessionize(parsed.withWatermark("event_time", WATERMARK_DELAY))
    stage_two = write_topic(session_records(sessions), options, OUTPUT_TOPIC, STAGE_TWO)
    return [stage_one, stage_two]
