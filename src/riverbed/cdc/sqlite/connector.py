"""``riverbed cdc sqlite``: tail the change table that the triggers fill, in ``seq`` order,
into one compacted topic per table; delete change rows only once the broker acknowledged.

Life of a change (see :mod:`riverbed.cdc.sqlite.triggers` for the objects in the database)::

    writer's transaction ──trigger──▶ _riverbed_cdc_changes(seq)   (same commit)
    connector: SELECT seq > sent ──▶ ChangeSink.send(position=seq)  (acks=all, idempotent)
    broker acknowledged up to seq n ──▶ offset {"install_id", "seq": n} to <prefix>.cdc-offsets
                                    ──▶ DELETE FROM _riverbed_cdc_changes WHERE seq <= n

**Crash behaviour.**  A SIGKILL of the connector at any moment leaves every change not yet
acknowledged in the change table; the restart re-sends them (duplicates only of changes
not yet acknowledged).  Rows that were acknowledged but not yet deleted are skipped when
the stored offset covers them (same ``install_id``: the change table was not recreated).
A SIGKILL of the writing application is SQLite's business: its transaction, triggers'
rows included, either committed or is rolled back by the next opener.

**Schema changes.**  Each cycle reads ``PRAGMA schema_version``; when it moved, the captured
tables' columns are compared with those the triggers were built for and the triggers are
re-created (``ADD COLUMN``, ``RENAME COLUMN``) and the table is snapshotted again (``r``
events), in one transaction.  Changes committed between the ALTER and that cycle carry the
old column set; the re-snapshot that follows them gives every key the new one.  A schema
change made while the connector handles an earlier one is seen on the next cycle.  A captured
column cannot be dropped (SQLite refuses ``DROP COLUMN`` of a column a trigger uses).  A
dropped table stops being captured.

Not thread-safe: :func:`~riverbed.cdc.runner.run` drives it from one thread.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from riverbed.cdc.envelope import (
    ChangeEvent,
    Field,
    Source,
    TableSchema,
    records_for,
    topic_name,
)
from riverbed.cdc.outbox import RecordRouter
from riverbed.cdc.position import OffsetStore, offset_key, offsets_topic
from riverbed.cdc.sink import ChangeSink
from riverbed.cdc.sqlite import triggers
from riverbed.cdc.sqlite.triggers import CHANGES, TableInfo
from riverbed.errors import CdcError

log = logging.getLogger(__name__)

SCHEMA = "main"
CONNECTOR = "sqlite"
SOURCE_STRUCT = "riverbed.cdc.sqlite.Source"
BATCH_ROWS = 2000
MAX_IN_FLIGHT = 20_000
RELEASE_INTERVAL_S = 0.1
BUSY_TIMEOUT_MS = 30_000


def open_database(path: Path) -> sqlite3.Connection:
    """Open an existing SQLite database read-write (never create one).

    Raises :class:`CdcError` when the path does not exist or is not a SQLite database."""
    if not path.exists():
        raise CdcError(f"no SQLite database at {str(path)!r} (the path does not exist)")
    if not path.is_file():
        raise CdcError(f"{str(path)!r} is not a file, so not a SQLite database")
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=rw",
            uri=True,
            isolation_level=None,
            timeout=BUSY_TIMEOUT_MS / 1000,
            check_same_thread=False,
        )
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error as exc:
        raise CdcError(f"cannot open {str(path)!r} as a SQLite database: {exc}") from None
    return conn


def _lock_exclusively(path: Path) -> int:
    """One connector per database: an exclusive ``flock`` on the database file, held until
    :meth:`SqliteConnector.close` (or the process dies).  ``flock`` locks are independent of
    SQLite's POSIX byte-range locks on Linux, so the application is not disturbed."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CdcError(f"another riverbed cdc connector is capturing {str(path)!r}") from None
    return fd


class SqliteConnector:
    """Captures ``tables`` (all tables with a key when empty) of the database at ``path``.

    ``client_config`` is a librdkafka config (``bootstrap.servers`` at least).  Topics are
    ``<topic_prefix>.main.<table>``; the position lives in ``<topic_prefix>.cdc-offsets``
    under ``["<topic_prefix>", {"server": "<topic_prefix>", "db": "<absolute path>"}]``.
    Call :meth:`start` once, then drive it with :func:`~riverbed.cdc.runner.run`.
    """

    def __init__(
        self,
        path: Path | str,
        client_config: Mapping[str, Any],
        *,
        topic_prefix: str = "riverbed",
        tables: Sequence[str] = (),
        schemas_enable: bool = False,
        router: RecordRouter | None = None,
    ) -> None:
        self.path = Path(path)
        self._router = router  # e.g. the outbox router (riverbed.cdc.outbox)
        self.topic_prefix = topic_prefix
        self._client_config = dict(client_config)
        self._wanted = list(dict.fromkeys(tables))
        self._schemas_enable = schemas_enable
        self._conn: sqlite3.Connection | None = None
        self._lock_fd = -1
        self._sink: ChangeSink[int] | None = None
        self._offsets = OffsetStore(self._client_config, offsets_topic(topic_prefix))
        self._offset_key = offset_key(
            topic_prefix, {"server": topic_prefix, "db": str(self.path.resolve())}
        )
        self._install_id = ""
        self._tables: dict[str, TableInfo] = {}
        self._keys: dict[str, tuple[str, ...]] = {}
        self._schemas: dict[str, TableSchema | None] = {}
        self._schema_version = -1
        self._sent = 0  # highest seq handed to the sink
        self._released = 0  # highest seq deleted from the change table
        self._skip_through = 0  # seqs already acknowledged before this start
        self._snapshot: tuple[int, int] | None = None
        self._last_release = 0.0
        self.snapshot_rows = 0

    # -- start ------------------------------------------------------------------------

    def start(self) -> None:
        """Validate the source, create the topics, install triggers + snapshot, and load
        the stored position.  Raises :class:`CdcError` with nothing installed in the
        database when the path, a table or the broker is wrong."""
        conn = open_database(self.path)
        lock_fd = -1
        try:
            lock_fd = _lock_exclusively(self.path)
            version = int(conn.execute("PRAGMA schema_version").fetchone()[0])  # see below
            wanted = self._resolve_tables(conn)
            sink: ChangeSink[int] = ChangeSink(self._client_config, router=self._router)
            topics = [topic_name(self.topic_prefix, SCHEMA, t) for t in wanted]
            recorded = self._recorded_keys(conn)
            topics += [topic_name(self.topic_prefix, SCHEMA, t) for t in recorded]
            sink.ensure_topics([*topics, self._offsets.topic])
            stored = self._offsets.load(self._offset_key) or {}
            installed = self._install(conn, [wanted[name] for name in wanted])
        except BaseException:
            conn.close()
            if lock_fd >= 0:
                os.close(lock_fd)
            raise
        self._conn, self._sink, self._lock_fd = conn, sink, lock_fd
        self._install_id = installed.install_id
        self._tables = dict(installed.tables)
        self._keys = triggers.recorded_keys(conn)
        self._schemas = {name: self._table_schema(info) for name, info in self._tables.items()}
        self._snapshot = triggers.snapshot_bounds(conn)
        self._schema_version = version  # read before looking at the tables (_check_schema)
        self.snapshot_rows = installed.snapshot_rows
        if stored.get("install_id") == self._install_id:
            self._skip_through = int(stored.get("seq", 0))
        self._sent = self._released = 0

    def _resolve_tables(self, conn: sqlite3.Connection) -> dict[str, TableInfo]:
        names = self._wanted or triggers.user_tables(conn)
        if not names:
            raise CdcError(f"no tables to capture in {str(self.path)!r}")
        infos: dict[str, TableInfo] = {}
        for name in names:
            info = triggers.table_info(conn, name)
            if info is None:
                raise CdcError(f"no table {name!r} in {str(self.path)!r}")
            triggers.require_key(info)
            infos[name] = info
        return infos

    @staticmethod
    def _recorded_keys(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_schema WHERE name = ?", (triggers.TABLES,)
        ).fetchone()
        return triggers.recorded_keys(conn) if exists else {}

    @staticmethod
    def _install(conn: sqlite3.Connection, wanted: list[TableInfo]) -> triggers.Installed:
        try:
            return triggers.install(conn, wanted)
        except sqlite3.Error as exc:
            raise CdcError(f"cannot install capture triggers: {exc}") from None

    # -- the loop ---------------------------------------------------------------------

    def poll_once(self) -> bool:
        """Send the next batch of changes and release what the broker acknowledged."""
        conn, sink = self._require()
        self._check_schema()
        if sink.in_flight() >= MAX_IN_FLIGHT:
            self._release(sink.poll(0.05))
            return True
        try:
            rows = conn.execute(
                f"SELECT seq, tbl, op, before, after, ts_ms FROM {CHANGES} WHERE seq > ? "
                f"ORDER BY seq LIMIT {BATCH_ROWS}",
                (self._sent,),
            ).fetchall()
        except sqlite3.OperationalError as exc:  # locked past the busy timeout
            log.warning("reading changes failed (%s); retrying", exc)
            return False
        now_ms = int(time.time() * 1000)
        for seq, table, op, before, after, ts_ms in rows:
            if seq > self._skip_through:
                self._send_change(
                    sink, int(seq), str(table), str(op), before, after, int(ts_ms), now_ms
                )
            else:
                sink.send(self._offsets.topic, [], int(seq))  # acknowledged before: release
            self._sent = int(seq)
        self._release(sink.poll(0))
        return bool(rows)

    def _send_change(
        self,
        sink: ChangeSink[int],
        seq: int,
        table: str,
        op: str,
        before_json: str | None,
        after_json: str | None,
        ts_ms: int,
        now_ms: int,
    ) -> None:
        before = triggers.decode_row(before_json)
        after = triggers.decode_row(after_json)
        key_columns = self._keys.get(table) or self._refresh_keys(table)
        image = after if after is not None else before
        assert image is not None
        key = {name: image.get(name) for name in key_columns}
        source = Source(
            CONNECTOR,
            self.topic_prefix,
            self.path.name,
            SCHEMA,
            table,
            ts_ms,
            snapshot=self._snapshot_marker(seq, op),
            extra={"seq": seq},
        )
        event = ChangeEvent(op, key, before, after, source, now_ms)  # type: ignore[arg-type]
        topic = topic_name(self.topic_prefix, SCHEMA, table)
        sink.send(topic, records_for(event, self._schemas.get(table)), seq)

    def _snapshot_marker(self, seq: int, op: str) -> str:
        if op != "r":
            return "false"
        if self._snapshot is not None:
            first, last = self._snapshot
            if seq == first:
                return "first"
            if seq == last:
                return "last"
        return "true"

    def _refresh_keys(self, table: str) -> tuple[str, ...]:
        conn, _sink = self._require()
        self._keys = triggers.recorded_keys(conn)
        if table not in self._keys:
            raise CdcError(f"a change of table {table!r}, which was never captured")
        return self._keys[table]

    def _release(self, acknowledged: int | None, *, force: bool = False) -> None:
        """Store the position and delete change rows up to ``acknowledged``."""
        if acknowledged is None or acknowledged <= self._released:
            return
        now = time.monotonic()
        if not force and now - self._last_release < RELEASE_INTERVAL_S:
            return
        conn, sink = self._require()
        self._offsets.store(
            sink, self._offset_key, {"install_id": self._install_id, "seq": acknowledged}
        )
        try:
            conn.execute(f"DELETE FROM {CHANGES} WHERE seq <= ?", (acknowledged,))
        except sqlite3.OperationalError as exc:  # busy: the rows stay, try next time
            log.warning("releasing changes failed (%s); retrying", exc)
            return
        self._released = acknowledged
        self._last_release = now

    # -- schema changes ---------------------------------------------------------------

    def _read_schema_version(self) -> int:
        conn, _sink = self._require()
        return int(conn.execute("PRAGMA schema_version").fetchone()[0])

    def _check_schema(self) -> None:
        """After any schema change: re-install (idempotent) for the tables to capture now —
        new triggers and a re-snapshot for a table whose columns changed or whose triggers
        went with a DROP TABLE; a new table (when capturing every table) is captured from
        now on, with a snapshot.

        The version recorded as handled is the one read *before* the tables are looked at:
        DDL of the application after that read (even while the triggers are re-installed)
        moves the version past it, so the next cycle looks again.  Our own trigger DDL moves
        it too, which costs one more pass that changes nothing (an unchanged table keeps
        its triggers: no DDL, the version stays)."""
        version = self._read_schema_version()
        if version == self._schema_version:
            return
        conn, sink = self._require()
        current: list[TableInfo] = []
        for name in self._wanted or triggers.user_tables(conn):
            info = triggers.table_info(conn, name)
            old = self._tables.get(name)
            if info is None:
                if old is not None:
                    log.warning("table %r was dropped; not captured until it exists again", name)
                continue
            if not info.key:
                if old is not None or self._wanted:
                    log.warning("table %r has no primary key; not captured", name)
                continue
            if old is not None and info.key != old.key:
                raise CdcError(f"the primary key of {name!r} changed; restart the connector")
            current.append(info)
        new = [info.name for info in current if info.name not in self._keys]
        if new:
            sink.ensure_topics([topic_name(self.topic_prefix, SCHEMA, t) for t in new])
        installed = self._install(conn, current)
        if installed.snapshot_rows or new or set(installed.tables) != set(self._tables):
            log.info(
                "capture triggers re-installed after a schema change (%d rows snapshotted)",
                installed.snapshot_rows,
            )
        self._tables = dict(installed.tables)
        self._keys = triggers.recorded_keys(conn)
        self._schemas = {n: self._table_schema(i) for n, i in self._tables.items()}
        self._snapshot = triggers.snapshot_bounds(conn)
        self._schema_version = version

    def _table_schema(self, info: TableInfo) -> TableSchema | None:
        if not self._schemas_enable:
            return None

        def field(column: triggers.Column, optional: bool) -> Field:
            connect_type = triggers.CONNECT_TYPE_OF_AFFINITY[
                triggers.affinity(column.declared_type)
            ]
            return Field(column.name, connect_type, optional=optional)

        by_name = {c.name: c for c in info.columns}
        return TableSchema(
            topic=topic_name(self.topic_prefix, SCHEMA, info.name),
            key_fields=[field(by_name[k], False) for k in info.key],
            value_fields=[field(c, not c.pk) for c in info.columns],
            source_name=SOURCE_STRUCT,
        )

    # -- end --------------------------------------------------------------------------

    def close(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for acknowledgements, release up to them, close."""
        if self._conn is None or self._sink is None:
            return
        try:
            acknowledged = self._sink.flush(timeout_s)
            if (acknowledged or 0) < self._sent:
                log.warning(
                    "changes up to seq %d not acknowledged within %.0f s: they stay in the "
                    "change table and are sent again at the next start",
                    self._sent,
                    timeout_s,
                )
            self._release(acknowledged, force=True)
            self._sink.flush(min(timeout_s, 5.0))  # the offset record
        finally:
            self._conn.close()
            self._conn = None
            os.close(self._lock_fd)  # after SQLite's fd: closing ours drops no SQLite lock
            self._lock_fd = -1

    def _require(self) -> tuple[sqlite3.Connection, ChangeSink[int]]:
        if self._conn is None or self._sink is None:
            raise CdcError("the connector is not started")
        return self._conn, self._sink
