"""Idempotent derived output for ``foreachBatch``: each (query id, batch id) is written once.

Spark replays a micro-batch after a crash between writing its output and committing it
to the checkpoint, with the same batch id and the same rows.  These sinks make that
replay change nothing:

* :class:`IdempotentSQLiteSink` inserts a batch's rows into a SQLite table and records
  ``(query_id, batch_id)`` in ``riverbed_batches`` **in the same transaction**; a batch whose
  marker exists is skipped.  A crash mid-write rolls the whole batch back (SQLite
  journal), so a table never holds part of a batch.
* :class:`IdempotentParquetSink` writes ``<dir>/<query_id>/batch-<batch_id>.parquet`` to a
  temporary name and renames it into place (atomic on POSIX); an existing file means the
  batch is done.  A crash leaves at most a ``.tmp-*`` file, ignored by readers and
  replaced on replay.

The query id is Spark's ``StreamingQuery.id`` (stable across restarts from the same
checkpoint), read from the ``sql.streaming.queryId`` local property of the micro-batch, or
given explicitly.  Both sinks run on the driver (foreachBatch does) and collect the batch
there: meant for derived tables of modest size per batch.  Calls for one sink must not
overlap (Spark runs one micro-batch of a query at a time); SQLite's locking makes
concurrent writers from different queries safe.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from datetime import datetime
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from pyspark.sql import DataFrame

from riverbed.errors import ConfigError

MARKER_TABLE = "riverbed_batches"


def streaming_query_id(df: DataFrame) -> str:
    """The id of the streaming query whose micro-batch ``df`` is (inside foreachBatch)."""
    query_id = df.sparkSession.sparkContext.getLocalProperty("sql.streaming.queryId")
    if not query_id:
        raise ConfigError("not inside a streaming micro-batch: pass query_id explicitly")
    return str(query_id)


def _sqlite_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return "INTEGER"
    if pa.types.is_floating(arrow_type):
        return "REAL"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "BLOB"
    return "TEXT"


def _sqlite_value(value: object) -> object:
    if value is None or isinstance(value, int | float | str | bytes):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class IdempotentSQLiteSink:
    """``foreachBatch(IdempotentSQLiteSink("out.db", "orders"))``: rows into ``table``."""

    def __init__(self, path: str | os.PathLike[str], table: str, query_id: str | None = None):
        self.path = Path(path)
        self.table = table
        self.query_id = query_id

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        query_id = self.query_id or streaming_query_id(df)
        if self.is_committed(query_id, batch_id):
            return
        self.write_batch(query_id, batch_id, df.toArrow())

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MARKER_TABLE} (query_id TEXT NOT NULL, "
            "batch_id INTEGER NOT NULL, row_count INTEGER NOT NULL, "
            "PRIMARY KEY (query_id, batch_id))"
        )
        return conn

    def is_committed(self, query_id: str, batch_id: int) -> bool:
        conn = self._connect()
        try:
            row = conn.execute(
                f"SELECT 1 FROM {MARKER_TABLE} WHERE query_id = ? AND batch_id = ?",
                (query_id, batch_id),
            ).fetchone()
            return row is not None
        finally:
            conn.close()

    def write_batch(self, query_id: str, batch_id: int, rows: pa.Table) -> bool:
        """Insert ``rows`` and the batch marker atomically; False if the batch was done."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                done = conn.execute(
                    f"SELECT 1 FROM {MARKER_TABLE} WHERE query_id = ? AND batch_id = ?",
                    (query_id, batch_id),
                ).fetchone()
                if done is not None:
                    conn.execute("ROLLBACK")
                    return False
                columns = ", ".join(f"{_quote(f.name)} {_sqlite_type(f.type)}" for f in rows.schema)
                conn.execute(f"CREATE TABLE IF NOT EXISTS {_quote(self.table)} ({columns})")
                if rows.num_rows:
                    names = ", ".join(_quote(n) for n in rows.schema.names)
                    marks = ", ".join("?" for _ in rows.schema.names)
                    data = [c.to_pylist() for c in rows.columns]
                    conn.executemany(
                        f"INSERT INTO {_quote(self.table)} ({names}) VALUES ({marks})",
                        ([_sqlite_value(col[i]) for col in data] for i in range(rows.num_rows)),
                    )
                conn.execute(
                    f"INSERT INTO {MARKER_TABLE} VALUES (?, ?, ?)",
                    (query_id, batch_id, rows.num_rows),
                )
                conn.execute("COMMIT")
                return True
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()


class IdempotentParquetSink:
    """``foreachBatch(IdempotentParquetSink("out/"))``: one Parquet file per batch id."""

    def __init__(self, directory: str | os.PathLike[str], query_id: str | None = None):
        self.directory = Path(directory)
        self.query_id = query_id

    def batch_path(self, query_id: str, batch_id: int) -> Path:
        return self.directory / query_id / f"batch-{batch_id:020d}.parquet"

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        query_id = self.query_id or streaming_query_id(df)
        if self.batch_path(query_id, batch_id).exists():
            return
        self.write_batch(query_id, batch_id, df.toArrow())

    def write_batch(self, query_id: str, batch_id: int, rows: pa.Table) -> bool:
        """Write the batch file atomically; False if it already exists."""
        final = self.batch_path(query_id, batch_id)
        if final.exists():
            return False
        final.parent.mkdir(parents=True, exist_ok=True)
        temporary = final.parent / f".tmp-{uuid.uuid4().hex}-{final.name}"
        pq.write_table(rows, temporary)
        with open(temporary, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(temporary, final)
        return True
