"""The sessions and fraud contracts computed in plain Python over a whole input (the
batch side of the differential tests), and seeded generators of disordered input."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from riverbed.pipelines.event_order import EventOrderBuffer
from riverbed.pipelines.examples import WATERMARK_DELAY_MS
from riverbed.pipelines.patterns import Match, Matcher, Pattern

MINUTE_MS = 60_000
GAP_MS = 30 * MINUTE_MS
WITHIN_MS = 5 * MINUTE_MS
DELAY_MS = WATERMARK_DELAY_MS
"""The examples' watermark delay, 10 min + 1 ms: a row exactly 10 min late is kept."""
T0 = 1_700_000_000_000


@dataclass(frozen=True)
class Arrival:
    """A record in arrival order: its value (a JSON object)."""

    value: dict[str, Any]


def sessions_of(views: list[dict[str, Any]], gap_ms: int = GAP_MS) -> list[dict[str, Any]]:
    """Every session of ``views`` ({user_id, url, ts}), as the contract's values: per user,
    views (sorted by ts, then url) more than ``gap_ms`` apart start a new session."""
    by_user: dict[str, list[dict[str, Any]]] = {}
    for view in views:
        by_user.setdefault(view["user_id"], []).append(view)
    out = []
    for user, user_views in by_user.items():
        user_views.sort(key=lambda v: (v["ts"], v["url"]))
        current: list[dict[str, Any]] = []
        for view in user_views:
            if current and view["ts"] - current[-1]["ts"] > gap_ms:
                out.append(_session(user, current))
                current = []
            current.append(view)
        out.append(_session(user, current))
    return out


def _session(user: str, views: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "user_id": user,
        "session_start": views[0]["ts"],
        "session_end": views[-1]["ts"],
        "views": len(views),
        "urls": [v["url"] for v in views],
    }


def final_sessions(views: list[dict[str, Any]], watermark_ms: int) -> list[dict[str, Any]]:
    """The sessions the contract emits once the watermark is ``watermark_ms``."""
    return [s for s in sessions_of(views) if s["session_end"] + GAP_MS <= watermark_ms]


def fraud_alerts(logins: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The contract's rule over every login ({user_id, ok, ts}), literally."""
    by_user: dict[str, list[dict[str, Any]]] = {}
    for login in logins:
        by_user.setdefault(login["user_id"], []).append(login)
    out = []
    for user, events in by_user.items():
        events.sort(key=lambda e: (e["ts"], e["ok"]))  # failures before success at a tie
        failures: list[int] = []
        for event in events:
            if not event["ok"]:
                failures.append(event["ts"])
                continue
            s = event["ts"]
            last = failures[-3:]
            if len(last) == 3 and all(t >= s - WITHIN_MS for t in last):
                out.append({"user_id": user, "failed_ts": last, "success_ts": s})
            failures = []
    return out


def shuffle_within(
    events: list[dict[str, Any]], rng: random.Random, max_ms: int
) -> list[dict[str, Any]]:
    """``events`` (any order) in an arrival order where no event arrives after one more
    than ``max_ms`` later in event time: sorted by ts plus a random delay < max_ms."""
    keyed = [(e["ts"] + rng.randrange(max_ms), i, e) for i, e in enumerate(events)]
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [e for _, _, e in keyed]


def max_disorder_ms(arrivals: list[dict[str, Any]]) -> int:
    """The most an event arrives behind the max ts that arrived before it."""
    seen = None
    worst = 0
    for event in arrivals:
        if seen is not None:
            worst = max(worst, seen - event["ts"])
        seen = event["ts"] if seen is None else max(seen, event["ts"])
    return worst


def generate_pageviews(
    rng: random.Random, users: int, count: int, start_ms: int
) -> list[dict[str, Any]]:
    """Views with gaps around 30 min (some exactly 30 min), distinct ts per user."""
    out = []
    clock = {f"u{i}": start_ms + rng.randrange(10 * MINUTE_MS) for i in range(users)}
    for n in range(count):
        user = f"u{rng.randrange(users)}"
        gap = rng.choice(
            [MINUTE_MS, 7 * MINUTE_MS, 20 * MINUTE_MS, GAP_MS, GAP_MS + 1, 45 * MINUTE_MS]
        )
        clock[user] += gap + rng.randrange(2) * rng.randrange(1, 1000)
        out.append({"user_id": user, "url": f"/p{n}", "ts": clock[user]})
    return out


def generate_logins(
    rng: random.Random, users: int, count: int, start_ms: int
) -> list[dict[str, Any]]:
    """Logins, mostly failures in bursts, steps of 0 (ties) to 3 min, some long pauses."""
    out = []
    clock = {f"u{i}": start_ms + rng.randrange(5 * MINUTE_MS) for i in range(users)}
    for _ in range(count):
        user = f"u{rng.randrange(users)}"
        step = rng.choice([0, 20_000, MINUTE_MS, 2 * MINUTE_MS, 3 * MINUTE_MS, 40 * MINUTE_MS])
        clock[user] += step
        out.append({"user_id": user, "ok": rng.random() < 0.3, "ts": clock[user]})
    return out


def pattern_in_batches(
    arrivals: list[dict[str, Any]],
    batch: int,
    pattern: Pattern,
    alert: Callable[[str, Match], dict[str, Any]],
    tie: Callable[[dict[str, Any]], Any],
) -> list[dict[str, Any]]:
    """``pattern`` (a :class:`Matcher` fed by an :class:`EventOrderBuffer`, per user) over
    login ``arrivals`` ({user_id, ts, ok}) in simulated micro-batches of ``batch`` rows:
    the watermark of a batch is the max ts of earlier ones minus the delay; a final
    no-data batch with the last watermark; state saved and restored between batches as
    JSON-like values.  ``tie(fields)`` orders events of equal ts; ``alert`` builds each
    match's output row."""
    states: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    max_ts: int | None = None
    batches = [arrivals[i : i + batch] for i in range(0, len(arrivals), batch)] + [[]]
    for rows in batches:
        watermark = 0 if max_ts is None else max_ts - DELAY_MS
        for user in sorted({r["user_id"] for r in rows} | set(states)):
            saved = states.pop(user, {})
            buffer = EventOrderBuffer(saved.get("buffer"))
            matcher = Matcher(pattern, saved.get("runs"))
            for r in rows:
                if r["user_id"] == user:
                    fields = {"ok": r["ok"]}
                    buffer.add(r["ts"], fields, tie(fields))
            for event in buffer.release(watermark):
                out.extend(alert(user, m) for m in matcher.feed(event))
            out.extend(alert(user, m) for m in matcher.advance_to(watermark))
            if len(buffer) or matcher.open_runs:
                states[user] = {"buffer": buffer.state(), "runs": matcher.state()}
        if rows:
            top = max(r["ts"] for r in rows)
            max_ts = top if max_ts is None else max(max_ts, top)
    return out
