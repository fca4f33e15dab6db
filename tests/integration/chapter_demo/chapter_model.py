"""The chapter demo's stages as plain-Python batch computations over the topics' contents
(what each streaming pipeline must have produced from the same input), and the checks
that compare them with the output topics, the views and the printed summary."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from pipelines_time.contract import sessions_of as contract_sessions_of

from riverbed.demo.chapter_inputs import END_USER, read_topic

MINUTE_MS = 60_000
GAP_MS = 30 * MINUTE_MS
WITHIN_MS = 5 * MINUTE_MS
HOUR_MS = 60 * MINUTE_MS
USERS_TOPIC = "riverbed.main.users"


def values(kafka: dict[str, object], topic: str) -> list[Any]:
    """The non-tombstone values of ``topic``, in offset order per partition."""
    return [v for _k, v in read_topic(kafka, topic) if v is not None]


def canonical(rows: list[Any]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def table_of(changes: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Replaying the changelog: the users table it describes."""
    table: dict[int, dict[str, Any]] = {}
    for c in changes:
        if c["op"] == "d":
            table.pop(c["before"]["id"], None)
        else:
            table[c["after"]["id"]] = c["after"]
    return table


def sqlite_users(path: Path) -> dict[int, dict[str, Any]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, name, country FROM users").fetchall()
    return {i: {"id": i, "name": n, "country": c} for i, n, c in rows}


def enrich(activities: list[dict[str, Any]], changes: list[dict[str, Any]]) -> list[Any]:
    """Each activity with the users row valid at its ts (latest change of its id with
    source.ts_ms <= ts, ties by topic order; none after a delete)."""
    out = []
    for a in activities:
        row: dict[str, Any] | None = None
        best: tuple[int, int] | None = None
        for position, c in enumerate(changes):
            image = c["before"] if c["op"] == "d" else c["after"]
            if str(image["id"]) != str(a["user_id"]):
                continue
            at = (c["source"]["ts_ms"], position)
            if c["source"]["ts_ms"] <= a["ts"] and (best is None or at > best):
                best, row = at, (None if c["op"] == "d" else c["after"])
        out.append(
            {
                **a,
                "name": None if row is None else row["name"],
                "country": None if row is None else row["country"],
            }
        )
    return out


def sessions_of(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chapter's sessions: :func:`pipelines_time.contract.sessions_of` with its gap."""
    return contract_sessions_of(views, GAP_MS)


def fraud_alerts(logins: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_user: dict[str, list[dict[str, Any]]] = {}
    for login in logins:
        by_user.setdefault(login["user_id"], []).append(login)
    out = []
    for user, events in by_user.items():
        events.sort(key=lambda e: (e["ts"], e["ok"]))
        failures: list[int] = []
        for event in events:
            if not event["ok"]:
                failures.append(event["ts"])
                continue
            last = failures[-3:]
            if len(last) == 3 and all(t >= event["ts"] - WITHIN_MS for t in last):
                out.append({"user_id": user, "failed_ts": last, "success_ts": event["ts"]})
            failures = []
    return out


def hourly_counts(views: list[dict[str, Any]]) -> Counter[tuple[str, int]]:
    return Counter((v["user_id"], v["event_time"] - v["event_time"] % HOUR_MS) for v in views)


def latest_per_key(kafka: dict[str, object], topics: list[str]) -> dict[str, Any]:
    """What a view holds after reading ``topics``: the last row per record key (a CDC
    delete or a tombstone removes it)."""
    rows: dict[str, Any] = {}
    for topic in topics:
        for key, value in read_topic(kafka, topic):
            name = (key or b"").decode()
            if name.startswith("{"):
                name = json.dumps(json.loads(name), sort_keys=True, separators=(",", ":"))
            if value is None or (isinstance(value, dict) and value.get("op") == "d"):
                rows.pop(name, None)
            else:
                rows[name] = value.get("after", value) if "op" in value else value
    return rows


def number(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in:\n{text}"
    return int(match.group(1).replace(",", ""))


def check_chapter(kafka: dict[str, object], data_dir: Path, out: str) -> dict[str, int]:
    """Every stage's output against the batch computation over its input topics, and the
    summary's numbers against both; returns the numbers."""
    changes = values(kafka, USERS_TOPIC)
    activities = values(kafka, "activity")
    pageviews = values(kafka, "pageviews")
    logins = values(kafka, "logins")
    # CDC: the changelog replays to the database's table; the summary counts its events
    assert table_of(changes) == sqlite_users(data_dir / "users.sqlite")
    ops = Counter(c["op"] for c in changes)
    assert number(r"cdc: +captured ([\d,]+) changes", out) == len(changes)
    assert number(r"([\d,]+) snapshot", out) == ops["r"]
    assert number(r"([\d,]+) updates", out) == ops["u"]
    assert number(r"([\d,]+) deletes", out) == ops["d"]
    # enrich: every activity (the end-of-input one too), with the row valid at its time
    expected = enrich(activities, changes)
    enriched = values(kafka, "activity-enriched")
    assert canonical(enriched) == canonical(expected)
    joined = sum(e["name"] is not None for e in expected)
    assert number(r"enrich: +joined ([\d,]+)", out) == joined
    assert number(r"of ([\d,]+) activities", out) == len(activities)
    # windows: page views per user per hour (nothing late: disorder < the allowed delay)
    counts = hourly_counts(pageviews)
    with sqlite3.connect(data_dir / "analytics.sqlite") as db:
        table = db.execute(
            "SELECT user_id, window_start_ms, count FROM pageviews_per_user_hour"
        ).fetchall()
    assert {(u, s): c for u, s, c in table} == dict(counts)
    assert number(r"windows: +([\d,]+) rows", out) == len(counts)
    assert number(r"([\d,]+) page views counted", out) == len(pageviews)
    # sessions and fraud: everything closes once the end-of-input event passes
    sessions = sessions_of([v for v in pageviews if v["user_id"] != END_USER])
    assert canonical(values(kafka, "sessions")) == canonical(sessions)
    assert number(r"sessions: +([\d,]+) sessions", out) == len(sessions)
    alerts = fraud_alerts(logins)
    assert canonical(values(kafka, "fraud-alerts")) == canonical(alerts)
    assert number(r"fraud: +([\d,]+) alerts", out) == len(alerts)
    # views: the latest row per key of their topics
    view_rows = latest_per_key(kafka, [USERS_TOPIC, "activity-enriched", "sessions"])
    assert number(r"search ([\d,]+) docs", out) == len(view_rows)
    assert number(r"cache ([\d,]+) keys", out) == len(view_rows)
    # the quick demo's contract lines
    produced = number(r"produced +([\d,]+) page views", out)
    assert produced == len(pageviews) == number(r"read ([\d,]+) in", out)
    return {
        "changes": len(changes),
        "joined": joined,
        "activities": len(activities),
        "windows": len(counts),
        "sessions": len(sessions),
        "alerts": len(alerts),
        "view_rows": len(view_rows),
    }
