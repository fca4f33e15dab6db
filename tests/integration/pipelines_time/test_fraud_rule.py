"""The fraud pattern (patterns.Matcher fed by event_order.EventOrderBuffer) equals the
contract's rule computed literally, on many seeded disordered inputs (no Spark)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from riverbed.pipelines.event_order import EventOrderBuffer
from riverbed.pipelines.fraud import FRAUD, alert, failures_first
from riverbed.pipelines.patterns import Matcher

from .contract import DELAY_MS, T0, fraud_alerts, generate_logins, shuffle_within


def run_in_batches(arrivals: list[dict[str, Any]], batch: int) -> list[dict[str, Any]]:
    """Simulate micro-batches: the watermark of a batch is the max ts of earlier ones
    minus the delay; a final no-data batch with the last watermark; state saved and
    restored between batches as JSON-like values."""
    states: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    max_ts: int | None = None
    batches = [arrivals[i : i + batch] for i in range(0, len(arrivals), batch)] + [[]]
    for rows in batches:
        watermark = 0 if max_ts is None else max_ts - DELAY_MS
        touched = {r["user_id"] for r in rows} | set(states)
        for user in sorted(touched):
            saved = states.pop(user, {})
            buffer = EventOrderBuffer(saved.get("buffer"))
            matcher = Matcher(FRAUD, saved.get("runs"))
            for r in rows:
                if r["user_id"] == user:
                    fields = {"ok": r["ok"]}
                    buffer.add(r["ts"], fields, failures_first(fields))
            for event in buffer.release(watermark):
                out.extend(alert(user, m) for m in matcher.feed(event))
            out.extend(alert(user, m) for m in matcher.advance_to(watermark))
            if len(buffer) or matcher.open_runs:
                states[user] = {"buffer": buffer.state(), "runs": matcher.state()}
        if rows:
            top = max(r["ts"] for r in rows)
            max_ts = top if max_ts is None else max(max_ts, top)
    return out


def _key(a: dict[str, Any]) -> tuple[Any, ...]:
    return (a["user_id"], a["success_ts"], tuple(a["failed_ts"]))


@pytest.mark.parametrize("seed", range(40))
def test_matcher_equals_rule(seed: int) -> None:
    rng = random.Random(seed)
    logins = generate_logins(rng, users=4, count=300, start_ms=T0)
    arrivals = shuffle_within(logins, rng, DELAY_MS - 1)
    final_watermark = max(e["ts"] for e in logins) - DELAY_MS
    expected = [a for a in fraud_alerts(logins) if a["success_ts"] <= final_watermark]
    got = run_in_batches(arrivals, batch=rng.choice([7, 50, 1000]))
    assert sorted(map(_key, got)) == sorted(map(_key, expected))
    assert len(got) == len(expected)


def test_ties_failures_before_success() -> None:
    m = 60_000
    logins = [
        {"user_id": "u", "ok": True, "ts": T0 + 3 * m},
        {"user_id": "u", "ok": False, "ts": T0 + 3 * m},
        {"user_id": "u", "ok": False, "ts": T0 + 2 * m},
        {"user_id": "u", "ok": False, "ts": T0 + 1 * m},
        {"user_id": "u", "ok": False, "ts": T0},
        {"user_id": "u", "ok": True, "ts": T0 + 60 * m},
    ]
    expected = [
        {"user_id": "u", "failed_ts": [T0 + m, T0 + 2 * m, T0 + 3 * m], "success_ts": T0 + 3 * m}
    ]
    assert fraud_alerts(logins) == expected
    assert run_in_batches(logins, batch=2) == expected
