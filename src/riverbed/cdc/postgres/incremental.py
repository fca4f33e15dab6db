"""Incremental snapshots while streaming (DBLog's watermarks, Debezium's signal table).

A user asks for one by inserting into the signal table (``--signal-table``, columns
``id text PRIMARY KEY, type text, data text``, published with the captured tables)::

    INSERT INTO riverbed_signal VALUES ('s1', 'execute-snapshot',
        '{"data-collections": ["public.orders"], "type": "incremental"}');

The request reaches the connector through the replication stream.  Each table is then read
in chunks in primary-key order, each chunk between two watermarks written to the signal
table in their own transactions::

    INSERT (<chunk>-open, snapshot-window-open)      -- commits first
    SELECT ... WHERE key > last ORDER BY key LIMIT n -- the chunk, buffered by key
    INSERT (<chunk>-close, snapshot-window-close)

While the stream is between the two watermarks, a change to a buffered key drops that key
from the buffer (the stream's event is newer than the chunk's read).  At the close
watermark the rest of the buffer goes out as ``r`` events with ``source.snapshot`` =
``"incremental"``: per key, an ``r`` never overtakes a newer change.

Progress is not stored: a connector restarted during an incremental snapshot forgets it
(insert the signal again; rows re-read are duplicates only).  Driven by the connector's
thread; not thread-safe.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from riverbed.cdc.postgres.catalog import TableInfo

__all__ = ["CHUNK_ROWS", "Chunk", "IncrementalSnapshot"]

CHUNK_ROWS = 1024


@dataclass(slots=True)
class Chunk:
    """One chunk in flight: its id, its table, and the rows not yet overtaken (by key)."""

    id: str
    table: TableInfo
    start_key: tuple[Any, ...] | None
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    window_open: bool = False


def key_text(key: dict[str, Any]) -> str:
    return json.dumps(key, sort_keys=True)


class IncrementalSnapshot:
    """The queue of tables to re-read, the current table's last key, the chunk in flight."""

    def __init__(self, signal: TableInfo, chunk_rows: int = CHUNK_ROWS) -> None:
        self.signal = signal
        self.chunk_rows = chunk_rows
        self.queue: deque[TableInfo] = deque()
        self.last_key: tuple[Any, ...] | None = None
        self.chunk: Chunk | None = None

    def request(self, tables: list[TableInfo]) -> None:
        self.queue.extend(t for t in tables if t not in self.queue)

    def active(self) -> bool:
        return bool(self.queue) or self.chunk is not None

    def next_chunk(
        self, conn: Any, columns: list[tuple[str, int, int]], render_row: Any
    ) -> Chunk | None:
        """Write the open watermark, read the next chunk of the head table, write the
        close watermark (three autocommit transactions on ``conn``).  None when the queue
        is empty; a finished table is popped and the next one started."""
        while self.queue:
            table = self.queue[0]
            chunk = Chunk(uuid.uuid4().hex, table, self.last_key)
            self._signal(conn, f"{chunk.id}-open", "snapshot-window-open", table)
            key_cols = ", ".join(f"t.{_quote(k)}" for k in table.key)
            select_list = ", ".join(f"t.{_quote(n)}::text" for n, *_ in columns)
            where = ""
            args: tuple[Any, ...] = ()
            if self.last_key is not None:
                where = f" WHERE ({key_cols}) > ({', '.join(['%s'] * len(table.key))})"
                args = self.last_key
            with conn.cursor() as cur:
                cur.execute(
                    f"SELECT {select_list}, {key_cols} FROM {table.quoted()} AS t{where} "
                    f"ORDER BY {key_cols} LIMIT {int(self.chunk_rows)}",
                    args or None,
                )
                rows = cur.fetchall()
            if not rows:
                self.queue.popleft()
                self.last_key = None
                continue
            for row in rows:
                after = render_row(columns, row[: len(columns)])
                chunk.rows[key_text({k: after[k] for k in table.key})] = after
            self.last_key = tuple(rows[-1][len(columns) :])
            self._signal(conn, f"{chunk.id}-close", "snapshot-window-close", table)
            self.chunk = chunk
            return chunk
        return None

    def _signal(self, conn: Any, signal_id: str, kind: str, table: TableInfo) -> None:
        with conn.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self.signal.quoted()} (id, type, data) VALUES (%s, %s, %s)",
                (signal_id, kind, json.dumps({"data-collection": table.qualified})),
            )

    def abandon_chunk(self) -> None:
        """The session broke mid-chunk (its watermarks may never arrive): read it again."""
        if self.chunk is not None:
            self.last_key = self.chunk.start_key
            self.chunk = None

    def overtaken(self, table: TableInfo, key: dict[str, Any]) -> None:
        """A streamed change of ``key``: inside the window it wins over the chunk's row."""
        chunk = self.chunk
        if chunk is not None and chunk.window_open and chunk.table == table:
            chunk.rows.pop(key_text(key), None)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
