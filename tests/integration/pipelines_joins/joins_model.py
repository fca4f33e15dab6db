"""The contracts of the join examples as plain-Python batch computations over the whole
input (the differential tests compare the drained streaming output with these), and the
seeded generators of their input with shuffled, out-of-order arrival."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

MIN = 60_000
WATERMARK_DELAY_MS = 10 * MIN + 1
"""The join examples' delay (``JOIN_WATERMARK_DELAY_MS``): a row up to exactly 10 min late
is kept, Spark dropping rows with ts <= max ts - delay."""
WINDOW_MS = 30 * MIN
T0 = 1_700_000_000_000


def arrival_order(
    events: Sequence[tuple[int, Any]], rng: random.Random, max_delay_ms: int = 10 * MIN - 2
) -> list[Any]:
    """Events ``(event time, payload)`` in an arrival order where each arrives at most
    ``max_delay_ms`` of event time after any later event (shuffled within the watermark).

    Spark's rate limit (``maxOffsetsPerTrigger``) reads partitions in proportion to their
    backlog, not in this order, so a run with a small limit wants some margin below the
    10 minutes the examples tolerate."""
    keyed = [(ts + rng.randrange(max_delay_ms + 1), i, p) for i, (ts, p) in enumerate(events)]
    return [p for _, _, p in sorted(keyed)]


def cdc_records(
    changes: Sequence[dict[str, Any]], key_columns: Sequence[str] = ("id",)
) -> list[tuple[Any, Any]]:
    """The topic records of Debezium ``changes`` as ``riverbed cdc`` writes them: key
    ``{column: value}`` of the row image, a tombstone after each delete."""
    out: list[tuple[Any, Any]] = []
    for c in changes:
        image = c["before"] if c["op"] == "d" else c["after"]
        key = {k: image[k] for k in key_columns}
        out.append((key, c))
        if c["op"] == "d":
            out.append((key, None))
    return out


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
    """Spark's global watermark after everything was read: min over inputs of max - 10 min
    - 1 ms."""
    return min(max(e["ts"] for e in events) for events in streams) - WATERMARK_DELAY_MS


# -- enrich ------------------------------------------------------------------------------


def envelope(op: str, before: Any, after: Any, ts_ms: int, table: str = "users") -> dict[str, Any]:
    """A Debezium change event value as ``riverbed cdc`` writes it."""
    source = {"version": "test", "connector": "sqlite", "name": "riverbed", "ts_ms": ts_ms}
    source |= {"snapshot": "false", "db": "t.db", "sequence": None, "schema": "main"}
    source |= {"table": table}
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": ts_ms + 3}


def change(op: str, uid: int, ts: int, name: Any = None, country: Any = None) -> dict[str, Any]:
    """A change of ``users(id, name, country)`` with ``source.ts_ms = ts``."""
    row = {"id": uid, "name": name, "country": country}
    if op == "d":
        return envelope("d", row, None, ts)
    return envelope(op, None if op == "c" else {"id": uid}, row, ts)


def act(uid: Any, ts: int, action: str = "view") -> dict[str, Any]:
    return {"user_id": uid, "action": action, "ts": ts}


def enrich_events(
    rng: random.Random, t0: int, users: int = 8, activities: int = 250
) -> list[tuple[int, tuple[str, dict[str, Any]]]]:
    """Seeded users changes (1-5 per user: inserts, updates, deletes, re-inserts, equal
    ``source.ts_ms`` at times) and activities over 3 hours (of users 1 to ``users`` + 2:
    two never exist), as ``(event time, ("c" | "a", value))``."""
    events: list[tuple[int, tuple[str, dict[str, Any]]]] = []
    for uid in range(1, users + 1):
        ts, exists = t0 + rng.randrange(30 * MIN), False
        for _ in range(rng.randrange(1, 6)):
            if exists and rng.random() < 0.25:
                c, exists = change("d", uid, ts, "x", "y"), False
            else:
                name, country = f"n{uid}-{rng.randrange(99)}", rng.choice(["uk", "fr", None])
                c, exists = change("u" if exists else "c", uid, ts, name, country), True
            events.append((ts, ("c", c)))
            ts += rng.choice([0, MIN, 7 * MIN, 20 * MIN, 45 * MIN])
    for _ in range(activities):
        ts = t0 + rng.randrange(180 * MIN)
        uid = rng.randrange(1, users + 3)
        events.append((ts, ("a", act(uid, ts, rng.choice(["view", "buy"])))))
    return events


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


def tweet(op: str, tid: int, author: int, text: Any = "hi", ts: int = T0) -> dict[str, Any]:
    row = {"id": tid, "user_id": author, "text": text, "ts": ts}
    if op == "d":
        return envelope("d", row, None, ts, "tweets")
    return envelope(op, row if op == "u" else None, row, ts, "tweets")


def follow(op: str, follower: int, followee: int) -> dict[str, Any]:
    row = {"follower": follower, "followee": followee}
    return envelope(op, row if op == "d" else None, None if op == "d" else row, T0, "follows")


def timeline_changes(
    rng: random.Random, t0: int, steps: int = 400
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Seeded tweets changes (posts of authors 1-7, text edits, deletes) and follows
    changes (followers 100-109 following and unfollowing), in commit order."""
    tweets: list[dict[str, Any]] = []
    follows: list[dict[str, Any]] = []
    live_tweets: dict[int, int] = {}
    edges: set[tuple[int, int]] = set()
    for step in range(steps):
        ts = t0 + step * 1000
        if rng.random() < 0.55:
            if live_tweets and rng.random() < 0.3:
                tid = rng.choice(sorted(live_tweets))
                if rng.random() < 0.5:
                    tweets.append(tweet("d", tid, live_tweets.pop(tid), ts=ts))
                else:
                    tweets.append(tweet("u", tid, live_tweets[tid], f"edit {step}", ts))
            else:
                tid, author = 1000 + step, rng.randrange(1, 8)
                live_tweets[tid] = author
                tweets.append(tweet("c", tid, author, rng.choice([f"t{step}", None]), ts))
        else:
            pair = (rng.randrange(100, 110), rng.randrange(1, 8))
            if pair in edges:
                edges.discard(pair)
                follows.append(follow("d", *pair))
            else:
                edges.add(pair)
                follows.append(follow("c", *pair))
    return tweets, follows


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


def repeated_records(records: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The records equal to the previous record of their key (in drain order, which is
    offset order within a partition, and a key has one partition).  The timeline writes
    a key only when its pair changed, so any is a duplicate (a batch written twice)."""
    last: dict[Any, Any] = {}
    repeats: list[tuple[Any, Any]] = []
    for key, value in records:
        if key in last and last[key] == value:
            repeats.append((key, value))
        last[key] = value
    return repeats
