"""The ``sliding-failures`` example: three failed logins within one minute, per user (a
sliding window: events within N of each other, not a fixed window).

Contract (``riverbed pipeline run sliding-failures``; docs/time-and-patterns.md):

* input topic ``logins``: JSON ``{"user_id": str, "ok": bool, "ts": epoch ms}``;
* output topic ``failed-login-bursts``, key ``user_id`` (plain text), value JSON with
  exactly ``{"user_id", "failed_ts": [t1, t2, t3]}``;
* per user, over the failed logins in event-time order (successful logins are ignored,
  they neither break nor count): whenever the last three failures not yet reported have
  ``t3 - t1 <= 1 min``, they are reported (oldest first) and none of them is reported
  again; so a burst of 6 failures within a minute gives two alerts.  Equivalently: scan
  the failures in order keeping the unreported ones; at each failure ``f_j`` emit
  ``f_{j-2}, f_{j-1}, f_j`` if those three are unreported and within one minute.

It is :func:`riverbed.pipelines.patterns.count_within` (``failed{3}`` with gaps allowed,
within 1 min, skip past last row) run by
:func:`riverbed.pipelines.pattern_stream.match_pattern`: a user's logins wait in state
until the watermark (max ``ts`` of earlier micro-batches - 10 min - 1 ms) passes them, then are
matched in event-time order, so each alert is final and emitted once, in the first
micro-batch whose watermark is at or past ``t3``.  State:
``<checkpoint>/failed-login-bursts``.  Records that are not a JSON object with a string
``user_id``, a boolean ``ok`` and an integer ``ts`` are skipped.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from riverbed.pipelines.examples import WATERMARK_DELAY, ExampleOptions
from riverbed.pipelines.fraud import parse_logins
from riverbed.pipelines.pattern_stream import match_pattern
from riverbed.pipelines.patterns import Match, count_within, field_equals
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "logins -> alerts for 3 failed logins within 1 min (sliding window, CEP)"
INPUT_TOPIC = "logins"
OUTPUT_TOPIC = "failed-login-bursts"
WITHIN_MS = 60 * 1000
FAILURES = 3

BURST = count_within("failed", field_equals("ok", False), FAILURES, WITHIN_MS)


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [INPUT_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {OUTPUT_TOPIC: {}}


def alert(user_id: str, match: Match) -> dict[str, Any]:
    """The output value of one match."""
    return {"user_id": user_id, "failed_ts": [event.ts for event in match.events["failed"]]}


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start the ``failed-login-bursts`` query (checkpoint under that name)."""
    logins = parse_logins(read_topics(spark, options, [INPUT_TOPIC]))
    watermarked = logins.withWatermark("event_time", WATERMARK_DELAY)
    alerts = match_pattern(watermarked, "user_id", "ts", ["ok"], BURST, alert)
    return [write_topic(alerts, options, OUTPUT_TOPIC, OUTPUT_TOPIC)]
