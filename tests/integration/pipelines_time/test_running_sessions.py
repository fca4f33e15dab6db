"""Running sessions (riverbed.pipelines.running_sessions) without Spark: the state
function driven batch by batch with a stand-in GroupState.  Compacting its upsert stream
(latest value per key, tombstones delete) gives exactly the sessions of the whole input,
final iff the watermark passed them, each final value emitted once; then the same on
Spark against a broker process."""

from __future__ import annotations

import json
import random
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from riverbed.pipelines.examples import ExampleOptions
from riverbed.pipelines.running_sessions import RunningSessionsFunction, running_sessions
from riverbed.pipelines.sessions import parse_pageviews
from riverbed.pipelines.topic_streams import read_topics, write_topic
from riverbed.testing.broker_process import BrokerProcess

from .conftest import create_topics, drain, produce_json
from .contract import (
    DELAY_MS,
    GAP_MS,
    MINUTE_MS,
    T0,
    generate_pageviews,
    sessions_of,
    shuffle_within,
)
from .group_state import FakeGroupState


class FakeState(FakeGroupState):
    """:class:`FakeGroupState` that checks each timer is not before the watermark."""

    def setTimeoutTimestamp(self, ts: int) -> None:
        assert ts >= self.watermark_ms
        super().setTimeoutTimestamp(ts)


def run(arrivals: list[dict[str, Any]], batch: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Micro-batches as Spark runs them (late rows dropped, timers, a final no-data
    batch); the compacted output and every final value emitted."""
    function = RunningSessionsFunction(GAP_MS)
    states: dict[str, tuple[str]] = {}
    timers: dict[str, int] = {}
    compacted: dict[str, Any] = {}
    finals: list[dict[str, Any]] = []
    max_ts: int | None = None
    for rows in [arrivals[i : i + batch] for i in range(0, len(arrivals), batch)] + [[]]:
        watermark = 0 if max_ts is None else max_ts - DELAY_MS
        rows = [r for r in rows if r["ts"] > watermark]
        users = {r["user_id"] for r in rows} | {u for u, t in timers.items() if t < watermark}
        for user in sorted(users):
            state = FakeState(states.pop(user, None), watermark)
            timers.pop(user, None)
            mine = [r for r in rows if r["user_id"] == user]
            frames = [
                pd.DataFrame({"ts": [r["ts"] for r in mine], "url": [r["url"] for r in mine]})
            ]
            for out in function((user,), iter(frames if mine else []), state):  # type: ignore[arg-type]
                for key, value in zip(out["key"], out["value"], strict=True):
                    if value is None:
                        compacted.pop(key, None)
                    else:
                        compacted[key] = json.loads(value)
                        if compacted[key]["final"]:
                            finals.append(compacted[key])
            if state.saved is not None:
                states[user] = state.saved
                assert state.timeout is not None
                timers[user] = state.timeout
        if rows:
            top = max(r["ts"] for r in rows)
            max_ts = top if max_ts is None else max(max_ts, top)
    return compacted, finals


def _strip(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k != "final"}


@pytest.mark.parametrize("seed", range(15))
def test_compacted_output_is_the_current_sessions(seed: int) -> None:
    rng = random.Random(seed)
    views = generate_pageviews(rng, users=3, count=150, start_ms=T0)
    arrivals = shuffle_within(views, rng, DELAY_MS - 1)
    compacted, finals = run(arrivals, batch=rng.choice([5, 30, 1000]))
    watermark = max(v["ts"] for v in views) - DELAY_MS
    expected = sessions_of(views)
    key = lambda s: (s["user_id"], s["session_start"])  # noqa: E731
    # every session is in the compacted topic under user/start, final iff the watermark passed
    assert sorted(map(_strip, compacted.values()), key=key) == sorted(expected, key=key)
    assert all(k == f"{v['user_id']}/{v['session_start']}" for k, v in compacted.items())
    assert all(v["final"] == (v["session_end"] + GAP_MS <= watermark) for v in compacted.values())
    # each final value emitted once
    assert len(finals) == len({key(f) for f in finals})


def test_a_late_view_merges_two_running_sessions() -> None:
    m = MINUTE_MS
    a = [{"user_id": "a", "url": u, "ts": T0 + t * m} for u, t in (("/1", 0), ("/3", 35))]
    # batch 2 (watermark T0 + 25 min) brings a view at 30 min: 0-30-35 is one session
    compacted, _ = run([*a, {"user_id": "a", "url": "/2", "ts": T0 + 30 * m}], batch=2)
    assert compacted == {
        f"a/{T0}": {
            "user_id": "a",
            "session_start": T0,
            "session_end": T0 + 35 * m,
            "views": 3,
            "urls": ["/1", "/2", "/3"],
            "final": False,
        }
    }


def test_on_spark(broker: BrokerProcess, spark: SparkSession, tmp_path: Any) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["in", "out"])
    m = MINUTE_MS
    options = ExampleOptions(bootstrap, tmp_path / "chk", available_now=True)

    def once() -> None:
        views = parse_pageviews(read_topics(spark, options, ["in"]))
        upserts = running_sessions(views.withWatermark("event_time", "10 minutes"), GAP_MS)
        query = write_topic(upserts, options, "out", "running", output_mode="append")
        assert query.awaitTermination(300)
        assert query.exception() is None, query.exception()

    produce_json(
        bootstrap,
        "in",
        [
            {"user_id": "a", "url": "/1", "ts": T0},
            {"user_id": "a", "url": "/3", "ts": T0 + 35 * m},
        ],
    )
    once()
    produce_json(bootstrap, "in", [{"user_id": "a", "url": "/2", "ts": T0 + 30 * m}])
    once()
    out = [(k.decode() if k else None, v) for k, v in drain(bootstrap, "out")]
    compacted: dict[str | None, Any] = {}
    for key, value in out:
        compacted[key] = value
    # two running sessions, then the late view merged them: a tombstone for a/35 min
    assert (f"a/{T0 + 35 * m}", None) in out
    assert {k: v for k, v in compacted.items() if v is not None} == {
        f"a/{T0}": {
            "user_id": "a",
            "session_start": T0,
            "session_end": T0 + 35 * m,
            "views": 3,
            "urls": ["/1", "/2", "/3"],
            "final": False,
        }
    }
