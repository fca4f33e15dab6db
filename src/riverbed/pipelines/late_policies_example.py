"""The ``late-policies`` example: one windowed count of page views under the three
late-event policies side by side (drop, side output, update).

Contract (``riverbed pipeline run late-policies``; docs/time-and-patterns.md):

* input topic ``pageviews``: JSON ``{"user_id": str, "url": str, "ts": epoch ms}``;
* one query counting the views per tumbling 5-minute window ``[window_start,
  window_end)`` (epoch ms) under each policy side by side, with
  :func:`riverbed.pipelines.late_policies.late_window_counts_per_policy` (watermark = max
  ``ts`` of earlier micro-batches - 10 min - 1 ms; a view is *late* when its window's end is at
  or behind the watermark):

  * ``pageview-counts-drop``: late views are dropped and counted;
  * ``pageview-counts-side``: late views go, unchanged (``{"user_id", "url", "ts"}``,
    key ``user_id``), to ``pageviews-late``, written in the same transaction;
  * ``pageview-counts-update``: a late view increments its closed window (kept 24 h past
    its end) and a ``correction`` carries the new count;

* values of the three count topics: JSON with exactly ``{"kind", "window_start",
  "window_end", "count", "previous"}``, ``kind`` one of ``final`` (a window closed by
  the watermark, emitted once), ``correction`` (update only: ``count`` the window's new
  total, ``previous`` the value emitted before), ``dropped`` (``count`` the policy's
  total of dropped views so far, ``previous`` the total before; window fields null);
  key ``window_start`` as decimal text (``dropped`` rows: key ``dropped``).

A window closes only when a later view moves the watermark past its end (no timer: an
idle input keeps the last windows open).  State: one key per policy (the watermark is
the pipeline's, so a policy's windows share one key), ``<checkpoint>/pageview-counts``;
one query, so the four topics are written in one transaction per micro-batch and task.
Records that are not a JSON object with an integer ``ts`` are skipped.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import LongType, StringType, StructField, StructType

from riverbed.pipelines.examples import WATERMARK_DELAY_MS, ExampleOptions
from riverbed.pipelines.late_policies import POLICIES, Policy, late_window_counts_per_policy
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "page views -> 5 min counts under the drop / side-output / update late policies"
INPUT_TOPIC = "pageviews"
LATE_TOPIC = "pageviews-late"
WINDOW_MS = 5 * 60 * 1000
RETENTION_MS = 24 * 3600 * 1000
QUERY_NAME = "pageview-counts"

PAGEVIEW_JSON = StructType(
    [
        StructField("user_id", StringType()),
        StructField("url", StringType()),
        StructField("ts", LongType()),
    ]
)


def counts_topic(policy: Policy) -> str:
    return f"pageview-counts-{policy}"


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [INPUT_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {**{counts_topic(p): {} for p in POLICIES}, LATE_TOPIC: {}}


def parse_views(records: DataFrame) -> DataFrame:
    """Kafka rows -> ``user_id, url, ts`` (rows without a ``ts`` skipped)."""
    view = F.from_json(F.col("value").cast("string"), PAGEVIEW_JSON).alias("v")
    return records.select(view).select("v.user_id", "v.url", "v.ts").filter(F.col("ts").isNotNull())


def count_records(rows: DataFrame) -> DataFrame:
    """Output rows (with ``policy``) -> ``key, value, topic`` (each policy's count topic;
    late rows to :data:`LATE_TOPIC`)."""
    value = F.to_json(
        F.struct("kind", "window_start", "window_end", "count", "previous"),
        {"ignoreNullFields": "false"},
    )
    late = F.col("kind") == "late"
    key = (
        F.when(late, F.get_json_object("event", "$.user_id"))
        .when(F.col("kind") == "dropped", F.lit("dropped"))
        .otherwise(F.col("window_start").cast("string"))
    )
    return rows.select(
        key.alias("key"),
        F.when(late, F.col("event")).otherwise(value).alias("value"),
        F.when(late, F.lit(LATE_TOPIC))
        .otherwise(F.concat(F.lit("pageview-counts-"), F.col("policy")))
        .alias("topic"),
    )


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start the one query (checkpoint ``<checkpoint>/pageview-counts``)."""
    views = parse_views(read_topics(spark, options, [INPUT_TOPIC]))
    rows = late_window_counts_per_policy(
        views, "ts", WINDOW_MS, WATERMARK_DELAY_MS, POLICIES, RETENTION_MS
    )
    marker = counts_topic(POLICIES[0])
    return [write_topic(count_records(rows), options, marker, QUERY_NAME, topic_column=True)]
