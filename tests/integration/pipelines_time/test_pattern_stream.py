"""A pattern with a trailing negation on Spark: its match is emitted by an event-time
timer (no later event of the key needed), in the first micro-batch whose watermark is past
``first ts + within``; a forbidden event inside the window cancels it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from riverbed.pipelines.examples import ExampleOptions
from riverbed.pipelines.fraud import parse_logins
from riverbed.pipelines.pattern_stream import match_pattern
from riverbed.pipelines.patterns import Match, Pattern, field_equals
from riverbed.pipelines.topic_streams import read_topics, write_topic
from riverbed.testing.broker_process import BrokerProcess

from .conftest import create_topics, drain, produce_json
from .contract import MINUTE_MS, T0

UNANSWERED = (
    Pattern.begin("failed", field_equals("ok", False))
    .not_followed_by(field_equals("ok", True))
    .within(5 * MINUTE_MS)
)


def _run(spark: SparkSession, bootstrap: str, checkpoint: Path) -> None:
    # Nested, so cloudpickle ships it by value: Spark's workers cannot import test modules.
    def _writer(user: str, match: Match) -> dict[str, Any]:
        return {"user_id": user, "failed_ts": [e.ts for e in match.events["failed"]]}

    options = ExampleOptions(bootstrap, checkpoint, available_now=True)
    logins = parse_logins(read_topics(spark, options, ["in"])).withWatermark(
        "event_time", "10 minutes"
    )
    matches = match_pattern(logins, "user_id", "ts", ["ok"], UNANSWERED, _writer)
    query = write_topic(matches, options, "out", "unanswered")
    assert query.awaitTermination(300)
    assert query.exception() is None, query.exception()


def test_trailing_negation_fires_on_the_watermark(
    broker: BrokerProcess, spark: SparkSession, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["in", "out"])
    m = MINUTE_MS
    produce_json(
        bootstrap,
        "in",
        [
            {"user_id": "a", "ok": False, "ts": T0},  # answered at +5 min (inclusive): none
            {"user_id": "a", "ok": True, "ts": T0 + 5 * m},
            {"user_id": "b", "ok": False, "ts": T0 + m},  # never answered: a match
            {"user_id": "c", "ok": False, "ts": T0 + 2 * m},  # answered after 5 min 1 ms
            {"user_id": "c", "ok": True, "ts": T0 + 7 * m + 1},
            # the clock: W = T0 + 6 min + 1 ms, past b's deadline, not c's
            {"user_id": "z", "ok": True, "ts": T0 + 16 * m + 1},
        ],
    )
    _run(spark, bootstrap, tmp_path / "chk")
    assert [v for _, v in drain(bootstrap, "out")] == [{"user_id": "b", "failed_ts": [T0 + m]}]
    produce_json(bootstrap, "in", [{"user_id": "z", "ok": True, "ts": T0 + 30 * m}])
    _run(spark, bootstrap, tmp_path / "chk")
    out = sorted((v["user_id"], v["failed_ts"]) for _, v in drain(bootstrap, "out"))
    assert out == [("b", [T0 + m]), ("c", [T0 + 2 * m])]
