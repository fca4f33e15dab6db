"""Putting one key's out-of-order events back into event-time order, released by the
watermark.

Stream processors see events in arrival order; rules stated "in event-time order" (the
fraud example, :mod:`riverbed.pipelines.patterns`) must wait until no earlier event can
still come.  With Spark's watermark ``W`` (max event time of earlier micro-batches minus
the allowed delay) an event with ``ts <= W`` is late: Spark drops it before stateful
operators.  So once the watermark is ``W`` every event with ``ts <= W`` that will ever be
processed has arrived, and :meth:`EventOrderBuffer.release` hands them over sorted by
``(ts, tie)`` -- once: the output computed from them is final.

Invariant: every buffered event has ``ts > released_through_ms`` (the highest watermark
released so far); an event added at or below it is late and refused (counted in
``late``), since events after it were already released.

State format (:meth:`EventOrderBuffer.state`): JSON-serializable
``{"through": int | null, "events": [[ts, tie, fields], ...], "late": int}``.  Not
thread-safe: one buffer per key, driven by one thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from riverbed.pipelines.patterns import Event


class EventOrderBuffer:
    """One key's events not yet released, in arrival order."""

    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        state = state or {}
        through = state.get("through")
        self.released_through_ms: int | None = None if through is None else int(through)
        self._events: list[tuple[int, Any, dict[str, Any]]] = [
            (int(ts), tie, dict(fields)) for ts, tie, fields in state.get("events", [])
        ]
        self.late = int(state.get("late", 0))

    def state(self) -> dict[str, Any]:
        return {
            "through": self.released_through_ms,
            "events": [[ts, tie, fields] for ts, tie, fields in self._events],
            "late": self.late,
        }

    def __len__(self) -> int:
        return len(self._events)

    @property
    def earliest_ts(self) -> int | None:
        return min((ts for ts, _, _ in self._events), default=None)

    def add(self, ts: int, fields: dict[str, Any], tie: Any = 0) -> bool:
        """Buffer an event; ``tie`` orders events of equal ``ts`` (smaller first; a JSON
        value).  False (and ``late`` counted) when it is behind what was released."""
        if self.released_through_ms is not None and ts <= self.released_through_ms:
            self.late += 1
            return False
        self._events.append((ts, tie, fields))
        return True

    def release(self, watermark_ms: int) -> list[Event]:
        """The buffered events with ``ts <= watermark_ms``, sorted by ``(ts, tie)``."""
        if self.released_through_ms is None or watermark_ms > self.released_through_ms:
            self.released_through_ms = watermark_ms
        ready = sorted(
            (e for e in self._events if e[0] <= watermark_ms), key=lambda e: (e[0], e[1])
        )
        self._events = [e for e in self._events if e[0] > watermark_ms]
        return [Event(ts, fields) for ts, _, fields in ready]
