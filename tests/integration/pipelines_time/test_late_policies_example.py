"""The ``late-policies`` example on local Spark against a ``riverbed broker`` process.

Stream = batch: seeded views arriving up to 10 min (less 1 ms) out of event-time order
(none late) give, in every policy's topic, exactly the per-window counts of the whole
input for the windows the watermark closed, each once.  Then, after a restart, views for
windows the first run already closed are dropped and counted (``drop``), copied to
``pageviews-late`` (``side``) or counted in a ``correction`` (``update``), while the
on-time rest of the input closes more windows as before.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

import riverbed.pipelines.late_policies_example as example
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain, produce_json
from .contract import DELAY_MS, MINUTE_MS, T0, shuffle_within

pytestmark = [pytest.mark.time_examples, pytest.mark.timeout(900)]  # two Spark runs

WINDOW_MS = example.WINDOW_MS


def _finals(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    watermark = max(v["ts"] for v in views) - DELAY_MS
    counts = Counter(v["ts"] - v["ts"] % WINDOW_MS for v in views)
    return [
        {
            "kind": "final",
            "window_start": s,
            "window_end": s + WINDOW_MS,
            "count": c,
            "previous": None,
        }
        for s, c in sorted(counts.items())
        if s + WINDOW_MS <= watermark
    ]


def _by_kind(bootstrap: str, topic: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for key, value in drain(bootstrap, topic):
        expected_key = "dropped" if value["kind"] == "dropped" else str(value["window_start"])
        assert key == expected_key.encode()
        out.setdefault(value["kind"], []).append(value)
    for rows in out.values():
        rows.sort(key=lambda v: (v["window_start"] or 0, v["count"]))
    return out


def test_three_policies_stream_equals_batch_then_late_views(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    topics = [example.counts_topic(p) for p in ("drop", "side", "update")]
    create_topics(bootstrap, ["pageviews", example.LATE_TOPIC, *topics])
    rng = random.Random(21)
    views = [
        {
            "user_id": f"u{rng.randrange(9)}",
            "url": f"/{i}",
            "ts": T0 + rng.randrange(60 * MINUTE_MS),
        }
        for i in range(240)
    ]
    arrivals = shuffle_within(views, rng, DELAY_MS - 1)
    half = len(arrivals) // 2
    first = arrivals[:half]
    produce_json(bootstrap, "pageviews", first)
    run_example(example, bootstrap, extra_source_options=(("maxOffsetsPerTrigger", "40"),))
    finals_before = _finals(first)
    assert len(finals_before) >= 3
    for topic in topics:
        assert _by_kind(bootstrap, topic) == {"final": finals_before}
    assert drain(bootstrap, example.LATE_TOPIC) == []

    # after a restart: views for windows the first run closed, then the on-time rest
    late = [
        {"user_id": "late", "url": f"/late{i}", "ts": T0 + ts}
        for i, ts in enumerate([MINUTE_MS, 2 * MINUTE_MS, 1, 10 * MINUTE_MS, 14 * MINUTE_MS])
    ]
    late_counts = Counter(v["ts"] - v["ts"] % WINDOW_MS for v in late)
    before = {f["window_start"]: f["count"] for f in finals_before}
    assert set(late_counts) <= set(before)
    produce_json(bootstrap, "pageviews", late + arrivals[half:])
    run_example(example, bootstrap)
    finals = _finals(views)
    assert len(finals) > len(finals_before)
    drop = _by_kind(bootstrap, topics[0])
    assert drop == {
        "final": finals,
        "dropped": [
            {"kind": "dropped", "window_start": None, "window_end": None, "count": 5, "previous": 0}
        ],
    }
    assert _by_kind(bootstrap, topics[1]) == {"final": finals}
    side = drain(bootstrap, example.LATE_TOPIC)
    assert sorted((v for _, v in side), key=lambda v: v["url"]) == late
    assert all(key == b"late" for key, _ in side)
    update = _by_kind(bootstrap, topics[2])
    assert update == {
        "final": finals,
        "correction": [
            {
                "kind": "correction",
                "window_start": s,
                "window_end": s + WINDOW_MS,
                "count": before[s] + n,
                "previous": before[s],
            }
            for s, n in sorted(late_counts.items())
        ],
    }
