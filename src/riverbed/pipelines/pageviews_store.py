"""The page-view pipeline's analytics table and watermark state: one SQLite file.

Everything a micro-batch learns is appended, in **one** transaction, as rows of
``pageview_facts`` through :class:`~riverbed.spark.idempotent.IdempotentSQLiteSink`, which
records ``(query_id, batch_id)`` in ``riverbed_batches`` in the same transaction.  A
replayed batch id is therefore never applied twice, and a crash mid-write leaves nothing.

``pageview_facts`` (an event log; the tables users query are views over it)::

    batch_id  fact        user_id   window_start_ms  window_end_ms    count
    --------  ----------  --------  ---------------  ---------------  ---------------------
    3         tumbling    user-001  1704067200000    1704070800000    on-time rows added
    3         hopping     user-001  1704066300000    1704069900000    on-time rows added
    3         late        user-004  1704060000000    1704063600000    stragglers (hour of)
    3         malformed   NULL      NULL             NULL             undecodable values
    3         progress    NULL      watermark used   max event time   rows in the batch

Views: ``pageviews_per_user_hour`` (tumbling), ``pageviews_hopping`` (1 h every 15 min),
``pageview_stragglers`` -- each ``(user_id, window_start_ms, window_end_ms, count)``.

Watermark state (Spark's rule): after batch N the watermark is ``max(event time seen in
batches 0..N) - allowed delay``, never decreasing, 0 before the first batch.  Batch N+1
is judged against it.  Because batch N's facts commit before batch N+1 starts (Spark runs
one micro-batch of a query at a time), the state read at the start of a batch is exactly
that of the batches before it -- also after a crash and a restart from the checkpoint.

One database belongs to one streaming query (one checkpoint): starting a fresh checkpoint
against an old database would count its topic twice.  Not thread-safe per instance; SQLite
serialises writers across processes.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa  # type: ignore[import-untyped]

from riverbed.spark.idempotent import IdempotentSQLiteSink

FACTS_TABLE = "pageview_facts"
FACTS_SCHEMA = pa.schema(
    [
        pa.field("batch_id", pa.int64()),
        pa.field("fact", pa.string()),
        pa.field("user_id", pa.string()),
        pa.field("window_start_ms", pa.int64()),
        pa.field("window_end_ms", pa.int64()),
        pa.field("count", pa.int64()),
    ]
)
WindowKind = Literal["tumbling", "hopping", "late"]
VIEWS: dict[WindowKind, str] = {
    "tumbling": "pageviews_per_user_hour",
    "hopping": "pageviews_hopping",
    "late": "pageview_stragglers",
}


@dataclass(frozen=True, slots=True, order=True)
class WindowCount:
    """One row of a window view: ``count`` page views of ``user_id`` in [start, end)."""

    user_id: str
    window_start_ms: int
    window_end_ms: int
    count: int


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """The ``progress`` fact of one committed batch."""

    batch_id: int
    watermark_ms: int
    max_event_time_ms: int | None
    rows: int


def next_watermark_ms(max_event_time_ms: int | None, allowed_delay_ms: int) -> int:
    """Spark's watermark: max event time seen minus the delay; 0 before any event."""
    if max_event_time_ms is None:
        return 0
    return max(0, max_event_time_ms - allowed_delay_ms)


def is_late(event_time_ms: int, watermark_ms: int) -> bool:
    """A row at or behind the watermark is a straggler (Spark: ``eventTime <= watermark``)."""
    return event_time_ms <= watermark_ms


class PageviewStore:
    """The SQLite file at ``path``: facts, views, watermark state."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.sink = IdempotentSQLiteSink(self.path, FACTS_TABLE)
        with self._connect() as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {FACTS_TABLE} (batch_id INTEGER, fact TEXT, "
                "user_id TEXT, window_start_ms INTEGER, window_end_ms INTEGER, count INTEGER)"
            )
            conn.execute(
                f"CREATE INDEX IF NOT EXISTS {FACTS_TABLE}_by_window ON {FACTS_TABLE} "
                "(fact, user_id, window_start_ms)"
            )
            for kind, view in VIEWS.items():
                conn.execute(
                    f"CREATE VIEW IF NOT EXISTS {view} AS SELECT user_id, window_start_ms, "
                    f"window_end_ms, SUM(count) AS count FROM {FACTS_TABLE} WHERE fact = "
                    f"'{kind}' GROUP BY user_id, window_start_ms, window_end_ms"
                )

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            with conn:  # commit on success, roll back on error
                yield conn
        finally:
            conn.close()

    # -- writing ----------------------------------------------------------------------

    def is_committed(self, query_id: str, batch_id: int) -> bool:
        return self.sink.is_committed(query_id, batch_id)

    def write_batch(self, query_id: str, batch_id: int, facts: pa.Table) -> bool:
        """Append one batch's facts atomically; False when the batch was already written."""
        return self.sink.write_batch(query_id, batch_id, facts.cast(FACTS_SCHEMA))

    # -- watermark state --------------------------------------------------------------

    def max_event_time_ms(self, before_batch: int | None = None) -> int | None:
        """Max event time of all committed batches (or of those before ``before_batch``)."""
        sql = f"SELECT MAX(window_end_ms) FROM {FACTS_TABLE} WHERE fact = 'progress'"
        args: tuple[int, ...] = ()
        if before_batch is not None:
            sql += " AND batch_id < ?"
            args = (before_batch,)
        with self._connect() as conn:
            value = conn.execute(sql, args).fetchone()[0]
        return None if value is None else int(value)

    def watermark_ms(self, allowed_delay_ms: int, before_batch: int | None = None) -> int:
        """The watermark a batch is judged against (see the module docstring)."""
        return next_watermark_ms(self.max_event_time_ms(before_batch), allowed_delay_ms)

    def progress(self) -> list[BatchProgress]:
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT batch_id, window_start_ms, window_end_ms, count FROM {FACTS_TABLE} "
                "WHERE fact = 'progress' ORDER BY batch_id"
            ).fetchall()
        return [
            BatchProgress(int(b), int(w), None if m is None else int(m), int(n))
            for b, w, m, n in rows
        ]

    def committed_batches(self) -> int:
        with self._connect() as conn:
            return int(
                conn.execute(
                    f"SELECT COUNT(*) FROM {FACTS_TABLE} WHERE fact = 'progress'"
                ).fetchone()[0]
            )

    # -- reading ----------------------------------------------------------------------

    def counts(self, kind: WindowKind = "tumbling") -> list[WindowCount]:
        """Every row of the view for ``kind``, sorted."""
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT user_id, window_start_ms, window_end_ms, count FROM {VIEWS[kind]}"
            ).fetchall()
        return sorted(WindowCount(str(u), int(s), int(e), int(c)) for u, s, e, c in rows)

    def fact_total(self, fact: str) -> int:
        with self._connect() as conn:
            value = conn.execute(
                f"SELECT SUM(count) FROM {FACTS_TABLE} WHERE fact = ?", (fact,)
            ).fetchone()[0]
        return int(value or 0)

    def totals_touched_by(self, batch_id: int) -> list[tuple[str, WindowCount]]:
        """``(kind, total as of batch_id)`` of every window that batch ``batch_id`` changed.

        Totals include only batches up to ``batch_id``, so a replayed batch re-emits the
        very values it emitted the first time.
        """
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT f.fact, f.user_id, f.window_start_ms, f.window_end_ms, SUM(f.count) "
                f"FROM {FACTS_TABLE} f JOIN (SELECT DISTINCT fact, user_id, window_start_ms "
                f"FROM {FACTS_TABLE} WHERE batch_id = ? AND fact IN ('tumbling', 'hopping')) t "
                "ON f.fact = t.fact AND f.user_id = t.user_id "
                "AND f.window_start_ms = t.window_start_ms "
                "WHERE f.batch_id <= ? GROUP BY f.fact, f.user_id, f.window_start_ms, "
                "f.window_end_ms ORDER BY f.fact, f.user_id, f.window_start_ms",
                (batch_id, batch_id),
            ).fetchall()
        return [(str(k), WindowCount(str(u), int(s), int(e), int(c))) for k, u, s, e, c in rows]
