"""The ``fraud`` example: three failed logins then a success within 5 minutes, per user.

Contract (``riverbed pipeline run fraud``; docs/time-and-patterns.md):

* input topic ``logins``: JSON ``{"user_id": str, "ok": bool, "ts": epoch ms}``;
* output topic ``fraud-alerts``, key ``user_id`` (plain text), value JSON with exactly
  ``{"user_id", "failed_ts": [t1, t2, t3], "success_ts"}``;
* per user in event-time order (ties in ts: failures before the success): a successful
  login at ``s`` preceded by at least three failed logins since the user's previous
  success, the last three of which have ``ts >= s - 5 min``, emits those three (oldest
  first) with ``s``; every success starts a fresh count.

Because logins of a user are consecutive events, "at least three failures since the
previous success" is "the three events right before ``s`` are failures", so the rule is
the strictly contiguous pattern ``failed{3} success`` within 5 min (:data:`FRAUD`), run by
:func:`riverbed.pipelines.pattern_stream.match_pattern`: a user's logins wait in state
until the watermark (10 min 1 ms behind the max event time of earlier micro-batches) passes
them, then are matched in event-time order, so each alert is final and emitted once.
An alert for a success at ``s`` appears in the first micro-batch whose watermark reaches
``s`` -- with ``--available-now``, when the input holds a login later than
``s + 10 min``.  State: ``<checkpoint>/fraud-alerts``.

Records that are not a JSON object with a string ``user_id``, a boolean ``ok`` and an
integer ``ts`` are skipped.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from riverbed.pipelines.examples import WATERMARK_DELAY, ExampleOptions
from riverbed.pipelines.pattern_stream import match_pattern
from riverbed.pipelines.patterns import Match, Pattern, field_equals
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "logins -> fraud alerts (3 failures then a success within 5 min, CEP pattern)"
INPUT_TOPIC = "logins"
OUTPUT_TOPIC = "fraud-alerts"
QUERY_NAME = "fraud-alerts"
WITHIN_MS = 5 * 60 * 1000
FAILURES = 3

LOGIN_JSON = StructType(
    [
        StructField("user_id", StringType()),
        StructField("ok", BooleanType()),
        StructField("ts", LongType()),
    ]
)

FRAUD = (
    Pattern.begin("failed", field_equals("ok", False))
    .times(FAILURES)
    .next("success", field_equals("ok", True))
    .within(WITHIN_MS)
)


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [INPUT_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {OUTPUT_TOPIC: {}}


def failures_first(fields: dict[str, Any]) -> int:
    """Tie-break at equal ts: failed logins (0) before successful ones (1)."""
    return 1 if fields.get("ok") else 0


def alert(user_id: str, match: Match) -> dict[str, Any]:
    """The output value of one match."""
    return {
        "user_id": user_id,
        "failed_ts": [event.ts for event in match.events["failed"]],
        "success_ts": match.events["success"][0].ts,
    }


def parse_logins(records: DataFrame) -> DataFrame:
    """Kafka rows -> ``user_id, ok, ts, event_time`` (malformed rows skipped)."""
    login = F.from_json(F.col("value").cast("string"), LOGIN_JSON).alias("v")
    return (
        records.select(login)
        .select("v.user_id", "v.ok", "v.ts")
        .filter(F.col("user_id").isNotNull() & F.col("ok").isNotNull() & F.col("ts").isNotNull())
        .withColumn("event_time", F.timestamp_millis("ts"))
    )


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start the ``fraud-alerts`` query (checkpoint ``<checkpoint>/fraud-alerts``)."""
    logins = parse_logins(read_topics(spark, options, [INPUT_TOPIC]))
    watermarked = logins.withWatermark("event_time", WATERMARK_DELAY)
    alerts = match_pattern(watermarked, "user_id", "ts", ["ok"], FRAUD, alert, tie=failures_first)
    return [write_topic(alerts, options, OUTPUT_TOPIC, QUERY_NAME, output_mode="append")]
