"""The search-index view: SQLite FTS5, one file, the embedded default.

Layout (one SQLite database, WAL mode)::

    view_docs(id INTEGER PRIMARY KEY,                the row as canonical JSON
              key TEXT UNIQUE, doc TEXT)
    view_search USING fts5(key UNINDEXED, body)      rowid = view_docs.id; every string
                                                     or number of the row, space-joined,
                                                     full-text indexed
    view_offsets(topic TEXT, partition INTEGER,      high-water offset per partition
                 high_water INTEGER, PRIMARY KEY (topic, partition))

One ``BEGIN IMMEDIATE`` ... ``COMMIT`` per :meth:`SearchView.apply`: the docs, the FTS
rows and the offsets change together, so a SIGKILL leaves either the batch or nothing
(SQLite's journal).  Readers (:meth:`SearchView.search`, or any ``sqlite3`` on the file)
see the last committed batch.  Not thread-safe: one thread at a time (any thread --
Spark calls ``foreachBatch`` functions from its own).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from riverbed.views.change import Change, ViewError, newest_per_key

_SCHEMA = """
CREATE TABLE IF NOT EXISTS view_docs(
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, doc TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS view_search USING fts5(key UNINDEXED, body);
CREATE TABLE IF NOT EXISTS view_offsets(
    topic TEXT NOT NULL, partition INTEGER NOT NULL, high_water INTEGER NOT NULL,
    PRIMARY KEY (topic, partition));
"""


def searchable_text(row: dict[str, Any]) -> str:
    """The text indexed for a row: its string values (and numbers), space-joined."""
    parts = [str(v) for v in row.values() if isinstance(v, str | int | float)]
    return " ".join(p for p in parts if not isinstance(p, bool))


class SearchView:
    """A full-text index of the latest row per key (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        try:
            self._db = sqlite3.connect(
                str(path), isolation_level=None, timeout=30, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise ViewError(f"search view {path}: {exc}") from None

    def high_water_offsets(self) -> dict[tuple[str, int], int]:
        rows = self._db.execute("SELECT topic, partition, high_water FROM view_offsets")
        return {(t, p): o for t, p, o in rows}

    def apply(self, changes: list[Change]) -> int:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            latest, marks = newest_per_key(changes, self.high_water_offsets())
            for key, change in latest.items():
                found = db.execute("SELECT id FROM view_docs WHERE key = ?", (key,)).fetchone()
                if found is not None:
                    db.execute("DELETE FROM view_search WHERE rowid = ?", found)
                if change.row is None:
                    db.execute("DELETE FROM view_docs WHERE key = ?", (key,))
                    continue
                doc = json.dumps(change.row, sort_keys=True, separators=(",", ":"))
                (doc_id,) = db.execute(
                    "INSERT INTO view_docs(key, doc) VALUES (?, ?)"
                    " ON CONFLICT(key) DO UPDATE SET doc = excluded.doc RETURNING id",
                    (key, doc),
                ).fetchone()
                db.execute(
                    "INSERT INTO view_search(rowid, key, body) VALUES (?, ?, ?)",
                    (doc_id, key, searchable_text(change.row)),
                )
            db.executemany(
                "INSERT INTO view_offsets(topic, partition, high_water) VALUES (?, ?, ?)"
                " ON CONFLICT(topic, partition) DO UPDATE SET high_water = excluded.high_water",
                [(t, p, o) for (t, p), o in marks.items()],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return len(latest)

    def search(self, query: str, limit: int = 20) -> list[str]:
        """Keys whose row matches the FTS5 ``query``, best first (bm25)."""
        try:
            rows = self._db.execute(
                "SELECT key FROM view_search WHERE view_search MATCH ? ORDER BY rank LIMIT ?",
                (query, limit),
            ).fetchall()
        except sqlite3.Error as exc:
            raise ViewError(f"search {query!r}: {exc}") from None
        return [key for (key,) in rows]

    def snapshot(self) -> dict[str, dict[str, Any]]:
        rows = self._db.execute("SELECT key, doc FROM view_docs ORDER BY key")
        return {key: json.loads(doc) for key, doc in rows}

    def close(self) -> None:
        self._db.close()
