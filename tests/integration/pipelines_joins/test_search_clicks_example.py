"""search-clicks: hand-written cases with known answers (bounds, ties, the watermark
boundary, a restart) and a seeded differential test against the batch model."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from riverbed.pipelines.live_state import read_state

from .conftest import drain, produce
from .joins_model import (
    MIN,
    T0,
    canonical,
    final_watermark,
    search_clicks,
    search_clicks_input,
)


def search(sid: Any, ts: int, user: Any = 1, query: Any = "q") -> tuple[str, dict[str, Any]]:
    return (str(sid), {"search_id": sid, "user_id": user, "query": query, "ts": ts})


def click(sid: Any, ts: int, url: Any = "u") -> tuple[str, dict[str, Any]]:
    return (str(sid), {"search_id": sid, "url": url, "ts": ts})


def hit(s: dict[str, Any], url: Any, click_ts: int) -> tuple[bytes, dict[str, Any]]:
    value = {"search_id": s["search_id"], "user_id": s["user_id"], "query": s["query"]}
    value |= {"clicked": True, "url": url, "search_ts": s["ts"], "click_ts": click_ts}
    return (str(s["search_id"]).encode(), value)


def miss(s: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
    value = {"search_id": s["search_id"], "user_id": s["user_id"], "query": s["query"]}
    value |= {"clicked": False, "url": None, "search_ts": s["ts"], "click_ts": None}
    return (str(s["search_id"]).encode(), value)


def test_known_answers_bounds_watermark_and_restart(
    broker: Any, run_example: Any, spark: Any, tmp_path: Path
) -> None:
    bs = broker.bootstrap_servers
    a, b = search("A", T0, user=7, query="cats"), search(42, T0, user="u-9", query=None)
    c, d = search("C", T0 + 10 * MIN), search("D", T0 + 30 * MIN + 1)
    e, z = search("E", T0 + 30 * MIN - 2), search("Z", T0 + 70 * MIN)
    produce(bs, "searches", [a, b, c, d, e, z])
    produce(
        bs,
        "clicks",
        [
            click("A", T0 + 30 * MIN + 1, "just-after"),  # outside: bounds are inclusive
            click("A", T0, "at-start"),
            click("A", T0 + 30 * MIN, "at-end"),
            click("A", T0 - 1, "before"),
            click("Z", T0 + 70 * MIN, "z"),
            click(42, T0 + 31 * MIN, "too-late-for-42"),
        ],
    )
    run_example("search-clicks", bs)
    # watermark = min(max search ts, max click ts) - 10 min - 1 ms = T0 + 60 min - 1: E's
    # window ends at T0 + 60 min - 2 < watermark (emitted), D's at T0 + 60 min + 1 (not yet).
    first = [
        hit(a[1], "at-start", T0),
        hit(a[1], "at-end", T0 + 30 * MIN),
        hit(z[1], "z", T0 + 70 * MIN),
        miss(b[1]),
        miss(c[1]),
        miss(e[1]),
    ]
    assert canonical(drain(bs, "search-clicks")) == canonical(first)
    # Interactive query: D's window is still open, so D waits in the join state.
    waiting = read_state(spark, "search-clicks", tmp_path / "checkpoint", key="D")
    assert [(e["side"], [r["search_ts"] for r in e["rows"]]) for e in waiting] == [
        ("searches", [T0 + 30 * MIN + 1])
    ]

    # Restart, the late boundary: a click exactly 10 min behind the latest click (and
    # search) is kept and joins D; one 10 min + 1 ms behind (ts = watermark) is late:
    # Spark drops input rows with ts <= watermark.  Both are inside D's window.
    produce(bs, "clicks", [click("D", T0 + 60 * MIN - 1, "10-min-1-ms-late")])
    produce(bs, "clicks", [click("D", T0 + 60 * MIN, "10-min-late")])
    run_example("search-clicks", bs)
    second = [*first, hit(d[1], "10-min-late", T0 + 60 * MIN)]
    assert canonical(drain(bs, "search-clicks")) == canonical(second)


def test_differential_seeded_with_restart(broker: Any, run_example: Any) -> None:
    rng = random.Random(12)
    bs = broker.bootstrap_servers
    searches, clicks, arrivals = search_clicks_input(rng, T0)
    half = len(arrivals) // 2
    for part in (arrivals[:half], arrivals[half:]):
        for topic in ("searches", "clicks"):
            produce(bs, topic, [(str(v["search_id"]), v) for t, v in part if t == topic])
        run_example("search-clicks", bs, extra_source_options=(("maxOffsetsPerTrigger", "80"),))
    expected = search_clicks(searches, clicks, final_watermark(searches, clicks))
    actual = drain(bs, "search-clicks")
    assert canonical(actual) == canonical(expected)
    assert any(not v["clicked"] for _, v in actual) and any(v["clicked"] for _, v in actual)
