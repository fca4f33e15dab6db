"""One key's side of a temporal stream-table join (the ``enrich`` example), in plain Python.

A :class:`TemporalKeyState` holds, for one join key:

* ``versions`` -- the table row's versions, ordered by ``(valid_from_ms, partition,
  offset)``: a version is valid from its change's ``source.ts_ms`` (inclusive) until the
  next version (exclusive); a delete is a version whose row is ``None``.  Equal
  ``source.ts_ms`` are ordered by topic position (per key, commit order): the later
  change wins from that millisecond on.
* ``pending`` -- events held back until the watermark passes their event time, so that a
  change up to 10 minutes out of order still reaches them (see :meth:`release`).

Format on the state store: one JSON text (:meth:`to_json` / :meth:`from_json`), so the
Spark state schema is a single string column.  Row images are kept as the JSON texts of
the enriching columns (``{"name": "\\"ann\\"", ...}``) so that their JSON types survive.

Pure and not thread-safe: one instance per key per call, on a Spark Python worker.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import Any

Version = tuple[int, int, int, dict[str, str] | None]
"""(valid_from_ms, partition, offset, row columns as JSON texts, or None once deleted)."""

Event = dict[str, Any]
"""An event waiting for enrichment; must hold ``ts`` (epoch ms)."""


@dataclass
class TemporalKeyState:
    """The versions of one key's row and the events waiting for them (module docstring)."""

    versions: list[Version] = field(default_factory=list)
    pending: list[Event] = field(default_factory=list)

    def apply_change(
        self, valid_from_ms: int, partition: int, offset: int, row: dict[str, str] | None
    ) -> None:
        """Insert a version (a change may arrive out of order); a replayed change (same
        partition and offset) replaces itself."""
        position = (valid_from_ms, partition, offset)
        self.versions = [v for v in self.versions if (v[1], v[2]) != (partition, offset)]
        keys = [(v[0], v[1], v[2]) for v in self.versions]
        self.versions.insert(bisect.bisect_right(keys, position), (*position, row))

    def row_at(self, ts_ms: int) -> dict[str, str] | None:
        """The row valid at ``ts_ms``: the last version with ``valid_from_ms <= ts_ms``;
        None before the first version and after a delete."""
        index = bisect.bisect_right([v[0] for v in self.versions], ts_ms)
        return self.versions[index - 1][3] if index else None

    def release(self, watermark_ms: int) -> list[Event]:
        """Remove and return the pending events with ``ts < watermark_ms``, oldest first:
        with at most 10 minutes of disorder every change at or before them has arrived."""
        ready = sorted((e for e in self.pending if e["ts"] < watermark_ms), key=lambda e: e["ts"])
        self.pending = [e for e in self.pending if e["ts"] >= watermark_ms]
        return ready

    def next_timeout_ms(self) -> int | None:
        """The earliest pending event time (the timer to set), or None."""
        return min((e["ts"] for e in self.pending), default=None)

    def prune(self, watermark_ms: int) -> None:
        """Forget versions no future event can use: events behind the watermark are
        dropped as late, so only the version valid at the watermark and later ones stay."""
        index = bisect.bisect_right([v[0] for v in self.versions], watermark_ms)
        if index > 1 and not any(e["ts"] < self.versions[index - 1][0] for e in self.pending):
            del self.versions[: index - 1]

    def to_json(self) -> str:
        return json.dumps({"v": self.versions, "p": self.pending}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> TemporalKeyState:
        if not text:
            return cls()
        doc = json.loads(text)
        versions: list[Version] = [(v[0], v[1], v[2], v[3]) for v in doc["v"]]
        return cls(versions=versions, pending=list(doc["p"]))
