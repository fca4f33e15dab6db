"""Sessions that are emitted while they run: a stateful variant of ``session_window``.

Spark's ``session_window`` in append mode (the ``sessions`` example) emits a session once,
when the watermark passes ``session_end + gap``.  :func:`running_sessions` emits every
session as soon as a micro-batch changes it, as an **upsert stream** meant for a compacted
topic:

* key ``"<user_id>/<session_start>"``; value JSON ``{user_id, session_start, session_end,
  views, urls, final}`` -- the session as known now (``final`` false), then once more with
  ``final`` true when the watermark reaches ``session_end + gap`` (the same moment
  ``session_window`` emits it; after that no view can change it);
* a late-arriving view that lands between two sessions merges them (or moves a session's
  start earlier): the surviving session is emitted under its new key and every key that
  disappeared gets a **tombstone** (null value), so a compacted topic holds exactly the
  current sessions.

Gap rule as ``session_window``: a view at most ``gap`` after the previous one (exactly
``gap`` included) continues the session.  Views are merged in the order they arrive, so
intermediate values depend on arrival; the final ones do not, and equal the batch
computation.  Views at or behind the watermark are dropped by Spark before this operator.

State per user (:class:`UserSessions`, one JSON string): the open sessions with their
views; a session leaves the state when it is final.  Not thread-safe; one per key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout


@dataclass(slots=True)
class Session:
    """One open session: its views as ``[ts, url]`` sorted by ``(ts, url)``."""

    views: list[tuple[int, Any]]
    emitted: bool = False  # a running value went out under this session's key
    dirty: bool = True  # changed since the last emission

    @property
    def start(self) -> int:
        return self.views[0][0]

    @property
    def end(self) -> int:
        return self.views[-1][0]

    def value(self, user_id: str, final: bool) -> dict[str, Any]:
        return {
            "user_id": user_id,
            "session_start": self.start,
            "session_end": self.end,
            "views": len(self.views),
            "urls": [url for _, url in self.views],
            "final": final,
        }


@dataclass(slots=True)
class UserSessions:
    """A user's open sessions, sorted by start, never within ``gap`` of each other."""

    gap_ms: int
    sessions: list[Session] = field(default_factory=list)

    @classmethod
    def from_state(cls, gap_ms: int, text: str | None) -> UserSessions:
        if not text:
            return cls(gap_ms)
        raw = json.loads(text)
        return cls(gap_ms, [Session([(int(t), u) for t, u in s["v"]], s["e"], False) for s in raw])

    def state(self) -> str:
        return json.dumps([{"v": s.views, "e": s.emitted} for s in self.sessions])

    def add(self, ts: int, url: Any) -> list[int]:
        """Add a view; the starts of sessions that stopped existing (merged or moved)."""
        touching = [s for s in self.sessions if s.start - self.gap_ms <= ts <= s.end + self.gap_ms]
        views = sorted([(ts, url), *(v for s in touching for v in s.views)], key=_order)
        new_start = views[0][0]
        # Keys that went out downstream and no longer name a session get a tombstone; the
        # merged session keeps the emitted key when its start did not move.
        gone = [s.start for s in touching if s.emitted and s.start != new_start]
        merged = Session(views, emitted=any(s.emitted and s.start == new_start for s in touching))
        self.sessions = sorted(
            [s for s in self.sessions if s not in touching] + [merged], key=lambda s: s.start
        )
        return gone

    def close(self, watermark_ms: int) -> list[Session]:
        """Remove and return the sessions the watermark made final."""
        final = [s for s in self.sessions if s.end + self.gap_ms <= watermark_ms]
        self.sessions = [s for s in self.sessions if s.end + self.gap_ms > watermark_ms]
        return final


def _order(view: tuple[int, Any]) -> tuple[int, str]:
    return (view[0], "" if view[1] is None else str(view[1]))


def session_key(user_id: str, start: int) -> str:
    return f"{user_id}/{start}"


class RunningSessionsFunction:
    """The ``applyInPandasWithState`` function (pickled to Spark's Python workers)."""

    def __init__(self, gap_ms: int) -> None:
        self.gap_ms = gap_ms

    def __call__(
        self, key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        user = str(key[0])
        sessions = UserSessions.from_state(self.gap_ms, state.get[0] if state.exists else None)
        rows: list[tuple[str, str | None]] = []
        for frame in frames:
            for ts, url in zip(frame["ts"], frame["url"], strict=True):
                url_value = None if url is None or url != url else str(url)
                rows.extend((session_key(user, s), None) for s in sessions.add(int(ts), url_value))
        for session in sessions.close(int(state.getCurrentWatermarkMs())):
            rows.append((session_key(user, session.start), _json(session.value(user, True))))
        for session in sessions.sessions:
            if session.dirty:
                rows.append((session_key(user, session.start), _json(session.value(user, False))))
                session.emitted, session.dirty = True, False
        if sessions.sessions:
            state.update((sessions.state(),))
            # Spark fires it in the first batch whose watermark is above it, i.e. reaches
            # the earliest end + gap: when that session becomes final.
            state.setTimeoutTimestamp(min(s.end for s in sessions.sessions) + self.gap_ms - 1)
        else:
            state.remove()
        if rows:
            yield pd.DataFrame({"key": [k for k, _ in rows], "value": [v for _, v in rows]})


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def running_sessions(views: DataFrame, gap_ms: int) -> DataFrame:
    """``key, value`` upserts of the running sessions of ``views`` (``user_id, url, ts``
    and a watermarked ``event_time``)."""
    return views.groupBy("user_id").applyInPandasWithState(
        RunningSessionsFunction(gap_ms),
        "key string, value string",
        "state string",
        "append",  # each upsert row is emitted once; the riverbed sink takes append only
        GroupStateTimeout.EventTimeTimeout,
    )
