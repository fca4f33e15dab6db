"""The ``fraud`` example on local Spark against a ``riverbed broker`` process.

* known answers: ties (failures before the success at equal ts), exactly 5 min (inclusive),
  a success resets the count, only the last three failures are reported; an alert for a
  success at ``s`` is emitted by the first micro-batch whose watermark reaches ``s``;
* late rows: a login exactly 10 min behind the max ts of an earlier micro-batch is kept
  (and completes an alert), one 10 min + 1 ms behind is dropped;
* stream = batch: seeded logins arriving up to 10 min (less 1 ms) out of event-time order,
  in two ``availableNow`` runs on one checkpoint (a restart in between), give exactly the
  alerts of the contract's rule computed in plain Python, each once.
"""

from __future__ import annotations

import random
from typing import Any

import riverbed.pipelines.fraud as fraud
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain, produce_json
from .contract import (
    DELAY_MS,
    MINUTE_MS,
    T0,
    fraud_alerts,
    generate_logins,
    max_disorder_ms,
    shuffle_within,
)


def _login(user: str, ok: bool, ts: int) -> dict[str, Any]:
    return {"user_id": user, "ok": ok, "ts": ts}


def _key(alert: dict[str, Any]) -> tuple[Any, ...]:
    return (alert["user_id"], alert["success_ts"], tuple(alert["failed_ts"]))


def test_known_answers(broker: BrokerProcess, run_example: RunExample) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["logins", "fraud-alerts"])
    m = MINUTE_MS
    logins = [
        # tie: the success at T0+3m comes after the failure at T0+3m
        _login("tie", True, T0 + 3 * m),
        _login("tie", False, T0 + 3 * m),
        _login("tie", False, T0 + 2 * m),
        _login("tie", False, T0 + m),
        _login("tie", False, T0),
        # exactly 5 min from the oldest of the last three: an alert
        *[_login("edge", False, T0 + t * m) for t in (0, 1, 2)],
        _login("edge", True, T0 + 5 * m),
        # 5 min + 1 ms: none
        *[_login("over", False, T0 + t * m) for t in (0, 1, 2)],
        _login("over", True, T0 + 5 * m + 1),
        # a success resets the count: two failures, success, two failures, success: none
        *[_login("reset", ok, T0 + i * 10_000) for i, ok in enumerate([0, 0, 1, 0, 0, 1])],
        # many failures: only the last three, then a second alert needs three more
        *[_login("many", False, T0 + t * m) for t in range(6)],
        _login("many", True, T0 + 6 * m),
        *[_login("many", False, T0 + t * m) for t in (7, 8)],
        _login("many", True, T0 + 9 * m),
        # success at T0+20m: emitted only once the watermark reaches it
        *[_login("wait", False, T0 + t * m) for t in (17, 18, 19)],
        _login("wait", True, T0 + 20 * m),
        _login("clock", True, T0 + 30 * m),  # watermark T0+20m-1 (the delay: 10 min 1 ms)
    ]
    produce_json(bootstrap, "logins", [{**x, "ok": bool(x["ok"])} for x in logins])
    run_example(fraud, bootstrap)
    out = drain(bootstrap, "fraud-alerts")
    assert all(key == value["user_id"].encode() for key, value in out)
    assert sorted(_key(v) for _, v in out) == [
        ("edge", T0 + 5 * m, (T0, T0 + m, T0 + 2 * m)),
        ("many", T0 + 6 * m, (T0 + 3 * m, T0 + 4 * m, T0 + 5 * m)),
        ("tie", T0 + 3 * m, (T0 + m, T0 + 2 * m, T0 + 3 * m)),
    ]
    assert all(set(v) == {"user_id", "failed_ts", "success_ts"} for _, v in out)
    produce_json(bootstrap, "logins", [_login("clock", True, T0 + 30 * m + 1)])
    run_example(fraud, bootstrap)
    again = sorted(_key(v) for _, v in drain(bootstrap, "fraud-alerts"))
    assert again == sorted(
        [*(_key(v) for _, v in out), ("wait", T0 + 20 * m, (T0 + 17 * m, T0 + 18 * m, T0 + 19 * m))]
    )


def test_stream_equals_batch_with_disorder_and_restart(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["logins", "fraud-alerts"])
    rng = random.Random(29)
    logins = generate_logins(rng, users=5, count=400, start_ms=T0)
    arrivals = shuffle_within(logins, rng, DELAY_MS - 1)
    assert 5 * MINUTE_MS < max_disorder_ms(arrivals) < DELAY_MS
    half = len(arrivals) // 2
    produce_json(bootstrap, "logins", arrivals[:half])
    run_example(fraud, bootstrap, extra_source_options=(("maxOffsetsPerTrigger", "70"),))
    first = [v for _, v in drain(bootstrap, "fraud-alerts")]
    watermark = max(x["ts"] for x in arrivals[:half]) - DELAY_MS
    expected = [a for a in fraud_alerts(arrivals[:half]) if a["success_ts"] <= watermark]
    assert sorted(map(_key, first)) == sorted(map(_key, expected))
    produce_json(bootstrap, "logins", arrivals[half:])
    run_example(fraud, bootstrap)
    out = drain(bootstrap, "fraud-alerts")
    watermark = max(x["ts"] for x in logins) - DELAY_MS
    expected = [a for a in fraud_alerts(logins) if a["success_ts"] <= watermark]
    assert len(expected) >= 8
    assert sorted(_key(v) for _, v in out) == sorted(map(_key, expected))
    assert len(out) == len(expected)


def test_a_login_exactly_10_min_late_is_kept_10_min_1_ms_late_dropped(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["logins", "fraud-alerts"])
    m = T0 + 60 * MINUTE_MS
    failures = [m - t * MINUTE_MS for t in (13, 12, 11)]
    # First run: three failures for each user and max ts m, so the next micro-batches see
    # the watermark m - 10 min - 1 ms.
    produce_json(
        bootstrap,
        "logins",
        [
            *[_login(user, False, ts) for user in ("kept", "dropped") for ts in failures],
            _login("clock", True, m),
        ],
    )
    run_example(fraud, bootstrap)
    assert drain(bootstrap, "fraud-alerts") == []
    produce_json(
        bootstrap,
        "logins",
        [
            _login("kept", True, m - 10 * MINUTE_MS),  # exactly 10 min late: kept, an alert
            _login("dropped", True, m - 10 * MINUTE_MS - 1),  # dropped by Spark: no alert
            _login("clock", True, m + 20 * MINUTE_MS),  # the final watermark passes both
        ],
    )
    run_example(fraud, bootstrap)
    out = [v for _, v in drain(bootstrap, "fraud-alerts")]
    assert out == [{"user_id": "kept", "failed_ts": failures, "success_ts": m - 10 * MINUTE_MS}]
