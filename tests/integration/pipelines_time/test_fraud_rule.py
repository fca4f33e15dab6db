"""The fraud pattern (patterns.Matcher fed by event_order.EventOrderBuffer) equals the
contract's rule computed literally, on many seeded disordered inputs (no Spark)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from riverbed.pipelines.fraud import FRAUD, alert, failures_first

from .contract import (
    DELAY_MS,
    T0,
    fraud_alerts,
    generate_logins,
    pattern_in_batches,
    shuffle_within,
)


def run_in_batches(arrivals: list[dict[str, Any]], batch: int) -> list[dict[str, Any]]:
    """The fraud pattern over simulated micro-batches (:func:`contract.pattern_in_batches`),
    failures before a success at the same ts."""
    return pattern_in_batches(arrivals, batch, FRAUD, alert, failures_first)


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
