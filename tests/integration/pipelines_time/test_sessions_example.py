"""The ``sessions`` example on local Spark against a ``riverbed broker`` process.

* known answers: a gap of exactly 30 min continues a session, 30 min + 1 ms starts a new
  one; a session is emitted only once the watermark (max ts - 10 min - 1 ms) reaches its
  end + 30 min, by the no-data batch an ``availableNow`` run ends with;
* late rows: a view exactly 10 min behind the max ts of an earlier micro-batch is kept
  (the watermark delay is 10 min + 1 ms);
* stream = batch: seeded views arriving up to 10 min (less 1 ms) out of event-time order,
  in two ``availableNow`` runs on one checkpoint (a restart in between), give exactly the
  sessions the contract computes in plain Python over the whole input, each once.
"""

from __future__ import annotations

import random

import riverbed.pipelines.sessions as sessions
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain, produce_json
from .contract import (
    DELAY_MS,
    GAP_MS,
    MINUTE_MS,
    T0,
    final_sessions,
    generate_pageviews,
    max_disorder_ms,
    shuffle_within,
)


def _view(user: str, url: str, ts: int) -> dict[str, object]:
    return {"user_id": user, "url": url, "ts": ts}


def _sorted(values: list[dict[str, object]]) -> list[dict[str, object]]:
    return sorted(values, key=lambda s: (str(s["user_id"]), int(str(s["session_start"]))))


def test_gap_of_exactly_30_min_continues_the_session(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["pageviews", "sessions"])
    views = [
        _view("a", "/1", T0),
        _view("a", "/2", T0 + GAP_MS),  # exactly 30 min: same session
        _view("a", "/3", T0 + 2 * GAP_MS + 1),  # 30 min + 1 ms: a new session
        _view("b", "/x", T0 + 5 * MINUTE_MS),
        # The session a:/3 ends at T0 + 60 min + 1 ms; it is emitted once the watermark
        # (max ts - 10 min - 1 ms) reaches T0 + 90 min + 1 ms, i.e. with a view at
        # T0 + 100 min + 2 ms.
        _view("c", "/late-enough", T0 + 100 * MINUTE_MS + 1),
    ]
    produce_json(bootstrap, "pageviews", views)
    run_example(sessions, bootstrap)
    out = drain(bootstrap, "sessions")
    assert all(key == str(value["user_id"]).encode() for key, value in out)
    assert _sorted([v for _, v in out]) == [
        {
            "user_id": "a",
            "session_start": T0,
            "session_end": T0 + GAP_MS,
            "views": 2,
            "urls": ["/1", "/2"],
        },
        {
            "user_id": "b",
            "session_start": T0 + 5 * MINUTE_MS,
            "session_end": T0 + 5 * MINUTE_MS,
            "views": 1,
            "urls": ["/x"],
        },
    ]
    # One more ms of event time and a:/3 is final.
    produce_json(bootstrap, "pageviews", [_view("c", "/later", T0 + 100 * MINUTE_MS + 2)])
    run_example(sessions, bootstrap)
    again = [v for _, v in drain(bootstrap, "sessions")]
    assert len(again) == 3
    assert [v for v in again if v not in [v for _, v in out]] == [
        {
            "user_id": "a",
            "session_start": T0 + 2 * GAP_MS + 1,
            "session_end": T0 + 2 * GAP_MS + 1,
            "views": 1,
            "urls": ["/3"],
        }
    ]


def test_stream_equals_batch_with_disorder_and_restart(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["pageviews", "sessions"])
    rng = random.Random(13)
    views = generate_pageviews(rng, users=5, count=160, start_ms=T0)
    arrivals = shuffle_within(views, rng, DELAY_MS - 1)
    assert 5 * MINUTE_MS < max_disorder_ms(arrivals) < DELAY_MS
    half = len(arrivals) // 2
    produce_json(bootstrap, "pageviews", arrivals[:half])
    run_example(sessions, bootstrap, extra_source_options=(("maxOffsetsPerTrigger", "50"),))
    first = [v for _, v in drain(bootstrap, "sessions")]
    watermark = max(int(str(v["ts"])) for v in arrivals[:half]) - DELAY_MS
    assert _sorted(first) == _sorted(final_sessions(arrivals[:half], watermark))
    produce_json(bootstrap, "pageviews", arrivals[half:])
    run_example(sessions, bootstrap)
    out = drain(bootstrap, "sessions")
    watermark = max(int(str(v["ts"])) for v in views) - DELAY_MS
    expected = final_sessions(views, watermark)
    assert len(expected) > 40
    assert _sorted([v for _, v in out]) == _sorted(expected)
    assert all(key == str(value["user_id"]).encode() for key, value in out)


def test_a_view_exactly_10_min_late_is_kept(broker: BrokerProcess, run_example: RunExample) -> None:
    """A view exactly 10 min behind the max ts of earlier micro-batches joins its session.

    (A view 10 min + 1 ms late is *not* dropped here: Spark filters the input of a
    ``session_window`` aggregation by the view's window end, ``ts + 30 min <= W``, not by
    ``ts <= W`` -- measured; see docs/time-and-patterns.md "Time".)"""
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, ["pageviews", "sessions"])
    m = T0 + 60 * MINUTE_MS
    # First run: max ts m, so the next micro-batches see the watermark m - 10 min - 1 ms.
    produce_json(
        bootstrap, "pageviews", [_view("kept", "/a", m - 15 * MINUTE_MS), _view("clock", "/m", m)]
    )
    run_example(sessions, bootstrap)
    assert drain(bootstrap, "sessions") == []
    produce_json(
        bootstrap,
        "pageviews",
        [
            _view("kept", "/b", m - 10 * MINUTE_MS),  # exactly 10 min late: kept
            # moves the final watermark past every session above (m + 50 min - 1 ms)
            _view("later", "/end", m + 60 * MINUTE_MS),
        ],
    )
    run_example(sessions, bootstrap)
    out = [v for _, v in drain(bootstrap, "sessions")]
    assert _sorted(out) == [
        {"user_id": "clock", "session_start": m, "session_end": m, "views": 1, "urls": ["/m"]},
        {
            "user_id": "kept",
            "session_start": m - 15 * MINUTE_MS,
            "session_end": m - 10 * MINUTE_MS,
            "views": 2,
            "urls": ["/a", "/b"],
        },
    ]
