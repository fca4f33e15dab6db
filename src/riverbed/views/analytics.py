"""The analytics view: DuckDB, the latest row per key as JSON, queryable with SQL.

Layout (one DuckDB file)::

    view_rows(key VARCHAR PRIMARY KEY, doc JSON)          latest row per key
    view_offsets(topic VARCHAR, partition INTEGER, high_water BIGINT,
                 PRIMARY KEY (topic, partition))

Query a column with DuckDB's JSON functions, e.g.
``SELECT doc->>'$.name' AS name FROM view_rows``; :meth:`AnalyticsView.export_parquet`
writes the rows to a Parquet file.  One DuckDB transaction per
:meth:`AnalyticsView.apply`: rows and offsets commit together (DuckDB's WAL), so a
SIGKILL leaves either the batch or nothing.  DuckDB allows one writing process per file;
the connection is not shared between threads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from riverbed.views.change import Change, ViewError, newest_per_key

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS view_rows(key VARCHAR PRIMARY KEY, doc JSON NOT NULL)",
    "CREATE TABLE IF NOT EXISTS view_offsets(topic VARCHAR NOT NULL, partition INTEGER"
    " NOT NULL, high_water BIGINT NOT NULL, PRIMARY KEY (topic, partition))",
)


class AnalyticsView:
    """The latest row per key in DuckDB (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        try:
            self._db = duckdb.connect(str(path))
            for statement in _SCHEMA:
                self._db.execute(statement)
        except duckdb.Error as exc:
            raise ViewError(f"analytics view {path}: {exc}") from None

    def high_water_offsets(self) -> dict[tuple[str, int], int]:
        rows = self._db.execute("SELECT topic, partition, high_water FROM view_offsets")
        return {(t, p): o for t, p, o in rows.fetchall()}

    def apply(self, changes: list[Change]) -> int:
        db = self._db
        db.execute("BEGIN TRANSACTION")
        try:
            latest, marks = newest_per_key(changes, self.high_water_offsets())
            if latest:  # set-based: list parameters unnested (executemany is per row)
                db.execute("DELETE FROM view_rows WHERE key IN (SELECT unnest(?))", [list(latest)])
                keys = [k for k, c in latest.items() if c.row is not None]
                docs = [json.dumps(latest[k].row, sort_keys=True) for k in keys]
                if keys:
                    db.execute(
                        "INSERT INTO view_rows SELECT unnest(?), unnest(?)::JSON", [keys, docs]
                    )
            if marks:
                db.executemany(
                    "INSERT OR REPLACE INTO view_offsets VALUES (?, ?, ?)",
                    [(t, p, o) for (t, p), o in marks.items()],
                )
            db.execute("COMMIT")
        except duckdb.Error as exc:
            db.execute("ROLLBACK")
            raise ViewError(f"analytics view: {exc}") from None
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return len(latest)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Run a read-only SQL query on the view (tables ``view_rows``, ``view_offsets``)."""
        return self._db.execute(sql).fetchall()

    def export_parquet(self, path: str | Path) -> None:
        """Write ``view_rows`` to a Parquet file (a snapshot of the committed view)."""
        target = str(path).replace("'", "''")
        self._db.execute(
            f"COPY (SELECT key, doc FROM view_rows ORDER BY key) TO '{target}' (FORMAT parquet)"
        )

    def snapshot(self) -> dict[str, dict[str, Any]]:
        rows = self._db.execute("SELECT key, doc FROM view_rows ORDER BY key").fetchall()
        return {key: json.loads(doc) for key, doc in rows}

    def close(self) -> None:
        self._db.close()
