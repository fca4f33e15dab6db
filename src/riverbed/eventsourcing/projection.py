"""Projections: read models kept up to date from ``<app>.events``, idempotent by offset.

::

    projection = SqliteProjection(path, config, AppTopics("bank"), apply=balances)
    projection.catch_up()      # applies every committed event not yet applied; returns count

The SQLite database holds the read model's tables (created by ``apply``'s owner) and
``projection_offsets(topic, partition, next_offset)``.  Each batch of events is applied and
the next offsets stored **in one SQLite transaction**, and an event below the stored offset
is skipped, so a crash at any moment and a re-run apply every event exactly once.
Rebuilding is deleting the database and catching up from offset 0.

``apply(conn, event)`` runs inside that transaction; it must only write through ``conn``.
Not thread-safe: one thread catches up.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from riverbed.eventsourcing.model import AppTopics, Event
from riverbed.eventsourcing.replay import partition_count, read_to_end

Apply = Callable[[sqlite3.Connection, Event], None]


class SqliteProjection:
    """A read model in SQLite fed by ``<app>.events`` (see module doc)."""

    def __init__(
        self,
        path: Path | str,
        config: Mapping[str, Any],
        topics: AppTopics,
        apply: Apply,
        *,
        setup_sql: str = "",
    ) -> None:
        self.config = dict(config)
        self.topics = topics
        self.apply = apply
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.executescript(
            "CREATE TABLE IF NOT EXISTS projection_offsets (topic TEXT NOT NULL, "
            "partition INTEGER NOT NULL, next_offset INTEGER NOT NULL, "
            "PRIMARY KEY (topic, partition));" + setup_sql
        )

    def offsets(self) -> dict[int, int]:
        """The next offset to apply per partition of the events topic."""
        rows = self.conn.execute(
            "SELECT partition, next_offset FROM projection_offsets WHERE topic = ?",
            (self.topics.events,),
        ).fetchall()
        return {int(p): int(o) for p, o in rows}

    def catch_up(self, batch: int = 500) -> int:
        """Apply every committed event up to the topic's end; return how many were new."""
        stored = self.offsets()
        start = {
            p: stored.get(p, 0) for p in range(partition_count(self.config, self.topics.events))
        }
        applied = 0
        pending: list[Any] = []
        for msg in read_to_end(self.config, self.topics.events, start):
            pending.append(msg)
            if len(pending) >= batch:
                applied += self._apply_batch(pending)
                pending = []
        if pending:
            applied += self._apply_batch(pending)
        return applied

    def _apply_batch(self, messages: list[Any]) -> int:
        applied = 0
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            stored = self.offsets()
            for msg in messages:
                if msg.offset() < stored.get(msg.partition(), 0):
                    continue  # applied before a crash or a re-run
                self.apply(self.conn, Event.decode(msg.value()))
                stored[msg.partition()] = msg.offset() + 1
                applied += 1
            self.conn.executemany(
                "INSERT INTO projection_offsets VALUES (?, ?, ?) ON CONFLICT (topic, partition)"
                " DO UPDATE SET next_offset = excluded.next_offset",
                [(self.topics.events, p, o) for p, o in stored.items()],
            )
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return applied

    def close(self) -> None:
        self.conn.close()
