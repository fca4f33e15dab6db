"""The ``sliding-failures`` example: three failed logins within one minute.

* default run: the example's pattern (matcher fed by the event-order buffer over
  simulated micro-batches, state round-trips) equals the contract's rule written
  literally in plain Python, 30 seeds, and hand-written edges (exactly 1 min, a burst of
  six, successes in between), no Spark;
* ``-m time_examples``: on Spark against a broker process, two ``availableNow`` runs on
  one checkpoint (a restart in between) = the rule over the whole input.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import riverbed.pipelines.sliding_failures as example
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain, produce_json
from .contract import DELAY_MS, T0, generate_logins, pattern_in_batches, shuffle_within

S = 1000


def bursts(logins: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The contract's rule, literally: per user over failures in ts order."""
    by_user: dict[str, list[int]] = {}
    for login in logins:
        if not login["ok"]:
            by_user.setdefault(login["user_id"], []).append(login["ts"])
    out = []
    for user, failures in sorted(by_user.items()):
        unreported: list[int] = []
        for ts in sorted(failures):
            unreported.append(ts)
            last = unreported[-3:]
            if len(last) == 3 and last[2] - last[0] <= example.WITHIN_MS:
                out.append({"user_id": user, "failed_ts": last})
                unreported = []
    return out


def run_in_batches(arrivals: list[dict[str, Any]], batch: int) -> list[dict[str, Any]]:
    """The example's pattern over simulated micro-batches (see test_fraud_rule.py)."""
    return pattern_in_batches(arrivals, batch, example.BURST, example.alert, lambda _: 0)


def _key(a: dict[str, Any]) -> tuple[Any, ...]:
    return (a["user_id"], tuple(a["failed_ts"]))


def _final(logins: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    watermark = max(e["ts"] for e in logins) - DELAY_MS
    return sorted(_key(a) for a in bursts(logins) if a["failed_ts"][2] <= watermark)


def test_hand_written_edges() -> None:
    def login(ts: int, ok: bool = False) -> dict[str, Any]:
        return {"user_id": "u", "ok": ok, "ts": T0 + ts}

    logins = [
        *(login(t) for t in (0, 30 * S, 60 * S)),  # exactly 1 min: an alert
        *(login(t) for t in (200 * S, 230 * S, 260 * S + 1)),  # 1 min + 1 ms: not yet...
        login(261 * S),  # ...230, 260.001, 261 within a minute
        login(262 * S, ok=True),  # successes neither break nor count
        *(login(t) for t in (400 * S, 401 * S, 402 * S, 403 * S, 404 * S, 405 * S)),
        login(3000 * S, ok=True),
    ]
    expected = [
        {"user_id": "u", "failed_ts": [T0, T0 + 30 * S, T0 + 60 * S]},
        {"user_id": "u", "failed_ts": [T0 + 230 * S, T0 + 260 * S + 1, T0 + 261 * S]},
        {"user_id": "u", "failed_ts": [T0 + 400 * S, T0 + 401 * S, T0 + 402 * S]},
        {"user_id": "u", "failed_ts": [T0 + 403 * S, T0 + 404 * S, T0 + 405 * S]},
    ]
    assert bursts(logins) == expected
    assert run_in_batches(logins, batch=3) == expected


@pytest.mark.parametrize("seed", range(30))
def test_pattern_equals_rule(seed: int) -> None:
    rng = random.Random(seed)
    logins = generate_logins(rng, users=4, count=300, start_ms=T0)
    arrivals = shuffle_within(logins, rng, DELAY_MS - 1)
    got = run_in_batches(arrivals, batch=rng.choice([7, 50, 1000]))
    assert sorted(map(_key, got)) == _final(logins)
    assert len(got) == len(_final(logins))


@pytest.mark.time_examples
@pytest.mark.timeout(900)
def test_stream_equals_batch_with_restart(broker: BrokerProcess, run_example: RunExample) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, [example.INPUT_TOPIC, example.OUTPUT_TOPIC])
    rng = random.Random(41)
    logins = generate_logins(rng, users=5, count=200, start_ms=T0)
    arrivals = shuffle_within(logins, rng, DELAY_MS - 1)
    half = len(arrivals) // 2
    produce_json(bootstrap, example.INPUT_TOPIC, arrivals[:half])
    run_example(example, bootstrap, extra_source_options=(("maxOffsetsPerTrigger", "40"),))
    first = drain(bootstrap, example.OUTPUT_TOPIC)
    assert sorted(_key(v) for _, v in first) == _final(arrivals[:half])
    produce_json(bootstrap, example.INPUT_TOPIC, arrivals[half:])
    run_example(example, bootstrap)
    out = drain(bootstrap, example.OUTPUT_TOPIC)
    expected = _final(logins)
    assert len(expected) >= 5
    assert sorted(_key(v) for _, v in out) == expected
    assert all(key == value["user_id"].encode() for key, value in out)
