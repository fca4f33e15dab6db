"""The contracts of the join examples as plain-Python batch computations over the whole
input (the differential tests compare the drained streaming output with these), and the
seeded generators of their input with shuffled, out-of-order arrival."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

MIN = 60_000
WATERMARK_DELAY_MS = 10 * MIN
WINDOW_MS = 30 * MIN


def arrival_order(events: Sequence[tuple[int, Any]], rng: random.Random) -> list[Any]:
    """Events ``(event time, payload)`` in an arrival order where each arrives less than
    10 minutes of event time after any later event (shuffled within the watermark)."""
    keyed = [(ts + rng.randrange(WATERMARK_DELAY_MS - 1), i, p) for i, (ts, p) in enumerate(events)]
    return [p for _, _, p in sorted(keyed)]


def canonical(records: Sequence[tuple[Any, Any]]) -> list[str]:
    """A multiset of (key, value) as sorted JSON lines, for comparing outputs."""
    return sorted(
        json.dumps([k.decode() if isinstance(k, bytes) else k, v], sort_keys=True)
        for k, v in records
    )


# -- search-clicks ---------------------------------------------------------------------


def search_clicks(
    searches: Sequence[dict[str, Any]], clicks: Sequence[dict[str, Any]], watermark_ms: int
) -> list[tuple[str, dict[str, Any]]]:
    """One record per (search, click) with ts in [search ts, search ts + 30 min], one
    unmatched record per search without such a click whose window end is behind the
    watermark (window end < watermark)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for s in searches:
        base = {"search_id": s["search_id"], "user_id": s["user_id"], "query": s["query"]}
        matched = [
            c
            for c in clicks
            if str(c["search_id"]) == str(s["search_id"])
            and s["ts"] <= c["ts"] <= s["ts"] + WINDOW_MS
        ]
        for c in matched:
            value = {**base, "clicked": True, "url": c["url"]}
            value |= {"search_ts": s["ts"], "click_ts": c["ts"]}
            out.append((str(s["search_id"]), value))
        if not matched and s["ts"] + WINDOW_MS < watermark_ms:
            value = {**base, "clicked": False, "url": None, "search_ts": s["ts"], "click_ts": None}
            out.append((str(s["search_id"]), value))
    return out


def search_clicks_input(
    rng: random.Random, t0: int, searches_n: int = 150
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """Seeded searches and clicks (0-3 clicks per search, some outside the window, ids
    alternately numbers and strings) and their arrival order as (topic, value)."""
    searches: list[dict[str, Any]] = []
    clicks: list[dict[str, Any]] = []
    events: list[tuple[int, tuple[str, dict[str, Any]]]] = []
    for i in range(searches_n):
        ts = t0 + i * MIN // 2 + rng.randrange(MIN)
        sid: Any = i if i % 2 else f"s{i}"
        user, query = rng.randrange(20), f"q{rng.randrange(9)}"
        s = {"search_id": sid, "user_id": user, "query": query, "ts": ts}
        searches.append(s)
        events.append((ts, ("searches", s)))
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            c_ts = ts + rng.randrange(-5 * MIN, 40 * MIN)
            c = {"search_id": sid, "url": f"https://r/{rng.randrange(100)}", "ts": c_ts}
            clicks.append(c)
            events.append((c_ts, ("clicks", c)))
    return searches, clicks, arrival_order(events, rng)


def final_watermark(*streams: Sequence[dict[str, Any]]) -> int:
    """Spark's global watermark after everything was read: min over inputs of max - 10 min."""
    return min(max(e["ts"] for e in events) for events in streams) - WATERMARK_DELAY_MS


# -- enrich ------------------------------------------------------------------------------


def envelope(op: str, before: Any, after: Any, ts_ms: int, table: str = "users") -> dict[str, Any]:
    """A Debezium change event value as ``riverbed cdc`` writes it."""
    source = {"version": "test", "connector": "sqlite", "name": "riverbed", "ts_ms": ts_ms}
    source |= {"snapshot": "false", "db": "t.db", "sequence": None, "schema": "main"}
    source |= {"table": table}
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": ts_ms + 3}


def enrich(
    activities: Sequence[dict[str, Any]], changes: Sequence[dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]]:
    """Each activity with the users row valid at its ts: among the changes of its id with
    ``source.ts_ms <= ts``, the latest by (ts_ms, order in ``changes``); ``changes`` are
    envelopes in topic order (tombstones left out)."""
    out: list[tuple[str, dict[str, Any]]] = []
    for a in activities:
        row: dict[str, Any] | None = None
        best: tuple[int, int] | None = None
        for position, change in enumerate(changes):
            image = change["before"] if change["op"] == "d" else change["after"]
            ts_ms = change["source"]["ts_ms"]
            if str(image["id"]) != str(a["user_id"]) or ts_ms > a["ts"]:
                continue
            if best is None or (ts_ms, position) > best:
                best = (ts_ms, position)
                row = None if change["op"] == "d" else change["after"]
        value = {"user_id": a["user_id"], "action": a["action"], "ts": a["ts"]}
        value |= {"name": row and row["name"], "country": row and row["country"]}
        out.append((str(a["user_id"]), value))
    return out


# -- timeline ----------------------------------------------------------------------------


def timeline_view(
    tweets: Sequence[dict[str, Any]], follows: Sequence[dict[str, Any]]
) -> dict[tuple[int, int], dict[str, Any]]:
    """The timelines after all changes (envelopes in commit order per table): (follower,
    tweet_id) -> value, for every tweet whose author the follower follows."""
    table: dict[int, dict[str, Any]] = {}
    for change in tweets:
        if change["op"] == "d":
            table.pop(change["before"]["id"], None)
        else:
            table[change["after"]["id"]] = change["after"]
    edges: set[tuple[int, int]] = set()
    for change in follows:
        if change["op"] == "d":
            edges.discard((change["before"]["follower"], change["before"]["followee"]))
        else:
            edges.add((change["after"]["follower"], change["after"]["followee"]))
    view = {}
    for follower, followee in edges:
        for tweet in table.values():
            if tweet["user_id"] == followee:
                value = {"follower": follower, "tweet_id": tweet["id"], "author": followee}
                value |= {"text": tweet["text"], "ts": tweet["ts"]}
                view[(follower, tweet["id"])] = value
    return view


def fold_compacted(records: Sequence[tuple[Any, Any]]) -> dict[tuple[int, int], Any]:
    """The latest value per key of a drained upsert/tombstone topic (keys as JSON)."""
    view: dict[tuple[int, int], Any] = {}
    for key, value in records:
        doc = json.loads(key)
        assert set(doc) == {"follower", "tweet_id"}, doc
        assert all(type(v) is int for v in doc.values()), doc
        k = (doc["follower"], doc["tweet_id"])
        if value is None:
            view.pop(k, None)
        else:
            assert (value["follower"], value["tweet_id"]) == k, (key, value)
            view[k] = value
    return view
