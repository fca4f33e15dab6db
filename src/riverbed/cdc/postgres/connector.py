"""``riverbed cdc postgres``: a consistent snapshot, then pgoutput logical decoding.

Start (:meth:`PostgresConnector.start`), in this order, so that a refused start creates
nothing: connect and check (:func:`.catalog.check_source`); refuse a slot another
connection holds (after waiting a few seconds for a killed predecessor's walsender to go);
read the stored position; create the compacted topics (one per table and
``<prefix>.cdc-offsets``), the publication (``FOR TABLE`` the captured tables) and, when
needed, the slot.

**Snapshot, then stream, no gap.**  A new slot is created with
``CREATE_REPLICATION_SLOT ... LOGICAL pgoutput EXPORT_SNAPSHOT``: its consistent point and
an exported snapshot mark the same moment.  A second session reads every table in a
``REPEATABLE READ`` transaction under ``SET TRANSACTION SNAPSHOT`` (``op: r``); the
replication session stays idle meanwhile (the snapshot lives as long as it does).  Once
the broker acknowledged every snapshot record, the position ``{"lsn": consistent point,
"snapshot_completed": true}`` is stored, and streaming starts at the consistent point:
every transaction committed after the snapshot, none before.

**Acknowledged LSN.**  Each change is sent with the end LSN of the last transaction
*completed before it*; each COMMIT adds an empty send carrying its own end LSN.  So the
sink's acknowledged position is always the end of a transaction all of whose records the
broker acknowledged (acks=all, idempotent).  Only that LSN is stored as the position and
then confirmed to the slot (``send_feedback(flush_lsn=..., force=True)``): PostgreSQL
keeps, and after a reconnect re-sends, every transaction after it.  Idle between
transactions with nothing in flight, the position follows the walsender's keepalive LSN
(``wal_end``), so WAL of uncaptured tables is not retained for the slot.  A SIGTERM during
the snapshot abandons it (:meth:`PostgresConnector.start` returns False).

**Crash behaviour.**  A position ``{"snapshot_completed": false}`` is stored (and
acknowledged) before the slot is created.  SIGKILL at any moment: on restart, a slot whose
position says the snapshot did not complete is dropped and the snapshot redone (duplicates
of ``r`` events); a slot with no position at all is not ours and is refused;
otherwise streaming resumes at ``max(stored lsn, slot's confirmed lsn)``, re-sending the
transactions not yet acknowledged (duplicates, never loss).  A PostgreSQL restart ends the
replication session: the connector reconnects (for up to ``reconnect_timeout_s``) and
resumes the same way; in-flight changes are flushed first.

Driven by one thread (:func:`riverbed.cdc.runner.run`); not thread-safe.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from riverbed.cdc.envelope import (
    ChangeEvent,
    Op,
    Source,
    TableSchema,
    records_for,
    topic_name,
)
from riverbed.cdc.outbox import RecordRouter
from riverbed.cdc.position import OffsetStore, offset_key, offsets_topic
from riverbed.cdc.postgres import pgoutput
from riverbed.cdc.postgres.catalog import (
    TableInfo,
    array_elements,
    check_source,
    connect,
    one_line,
    slot_state,
)
from riverbed.cdc.postgres.incremental import IncrementalSnapshot
from riverbed.cdc.postgres.values import UNAVAILABLE, TypeInfo, connect_field, render
from riverbed.cdc.sink import ChangeSink
from riverbed.errors import CdcError

__all__ = ["PostgresConfig", "PostgresConnector"]

log = logging.getLogger(__name__)

CONNECTOR = "postgresql"
SNAPSHOT_FETCH_ROWS = 2000
FEEDBACK_INTERVAL_S = 1.0
TRUNCATE_KEY = b"{}"  # compacted topics refuse null keys: a truncate is keyed {}


@dataclass(frozen=True, slots=True)
class PostgresConfig:
    dsn: str
    bootstrap_servers: str
    topic_prefix: str = "riverbed"
    tables: tuple[str, ...] = ()
    slot: str = "riverbed"
    publication: str = "riverbed_publication"
    slot_wait_s: float = 5.0
    reconnect_timeout_s: float = 60.0
    schemas_enable: bool = False
    signal_table: str | None = None  # incremental snapshots on request (incremental.py)
    incremental_chunk_rows: int = 1024  # Debezium's incremental.snapshot.chunk.size
    kafka: Mapping[str, Any] = field(default_factory=dict)


def _columns(conn: Any, table: TableInfo) -> list[tuple[str, int, int]]:
    """``(name, type oid, typmod)`` of the table's live columns, in order."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT a.attname::text, a.atttypid::int8, a.atttypmod::int8 FROM pg_attribute a "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 "
            "AND NOT a.attisdropped ORDER BY a.attnum",
            (table.quoted(),),
        )
        return [(str(name), int(oid), int(mod)) for name, oid, mod in cur.fetchall()]


def _lsn_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def _parse_lsn(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


class PostgresConnector:
    """One slot's changes into ``<prefix>.<schema>.<table>`` topics (see module doc)."""

    def __init__(self, config: PostgresConfig, *, router: RecordRouter | None = None) -> None:
        """``router`` (e.g. :class:`~riverbed.cdc.outbox.OutboxRouter`) may replace the
        records of some tables' changes (see :class:`~riverbed.cdc.sink.ChangeSink`)."""
        self.config = config
        kafka = {"bootstrap.servers": config.bootstrap_servers, **config.kafka}
        self.sink: ChangeSink[int] = ChangeSink(kafka, router=router)
        self.offsets = OffsetStore(kafka, offsets_topic(config.topic_prefix))
        self.tables: dict[str, TableInfo] = {}
        self.types = TypeInfo()
        self.db = ""
        self._offset_key = b""
        self._conn: Any = None  # replication connection
        self._cursor: Any = None
        self._relations: dict[int, pgoutput.Relation] = {}
        self._schemas: dict[str, TableSchema] = {}  # qualified table -> its Connect schema
        self._last_end_lsn = 0  # end LSN of the last completed transaction
        self._tx: pgoutput.Begin | None = None
        self._confirmed = 0
        self._last_feedback = 0.0
        self._last_idle_advance = 0.0
        self._stop: threading.Event | None = None
        self._snapshot_started = False
        self._inc: IncrementalSnapshot | None = None
        self._sql: Any = None  # a plain session for incremental snapshot chunks

    # -- start --------------------------------------------------------------------------

    def start(self, stop: threading.Event | None = None) -> bool:
        """Check, create what is missing, snapshot if needed, start streaming.

        Returns False when ``stop`` was set during the snapshot: it is abandoned (the next
        start drops the slot and snapshots again) and the caller should just close."""
        import psycopg2

        try:
            return self._start(stop)
        except psycopg2.Error as exc:
            raise CdcError(f"PostgreSQL refused: {one_line(exc)}") from None

    def _start(self, stop: threading.Event | None) -> bool:
        self._stop = stop
        cfg = self.config
        conn = connect(cfg.dsn)
        try:
            tables = check_source(
                conn, list(cfg.tables), cfg.slot, cfg.publication, cfg.signal_table
            )
            published = list(tables)
            if cfg.signal_table is not None:
                self._inc = IncrementalSnapshot(tables.pop(), cfg.incremental_chunk_rows)
            self.tables = {t.qualified: t for t in tables}
            self.types = TypeInfo(array_elements(conn))
            with conn.cursor() as cur:
                cur.execute("SELECT current_database()")
                self.db = str(cur.fetchone()[0])
            state = self._wait_slot_inactive(conn)
            self._offset_key = offset_key(
                cfg.topic_prefix, {"server": cfg.topic_prefix, "db": self.db, "slot": cfg.slot}
            )
            position = self.offsets.load(self._offset_key)
            if state is not None and position is None:
                raise CdcError(
                    f"replication slot {cfg.slot!r} exists but {self.offsets.topic!r} "
                    "holds no position for it: drop the slot "
                    f"(SELECT pg_drop_replication_slot('{cfg.slot}')) or choose "
                    "another --slot"
                )
            self.sink.ensure_topics(
                [self.offsets.topic]
                + [topic_name(cfg.topic_prefix, t.schema, t.table) for t in tables]
            )
            self._ensure_publication(conn, published)
            snapshot_done = bool(position and position.get("snapshot_completed"))
            if state is not None and not snapshot_done:
                with conn.cursor() as cur:  # ours, killed before its snapshot completed
                    cur.execute("SELECT pg_drop_replication_slot(%s)", (cfg.slot,))
                state = None
            if state is None:
                # recorded first, so that a crash before the snapshot completes lets the
                # next start drop this slot as its own
                self._store_position(0, snapshot_completed=False)
                self._flush_all("the position")
                self._conn = connect(cfg.dsn, replication=True)
                start_lsn = self._create_slot_and_snapshot(conn)
                if start_lsn is None:
                    return False
            else:
                assert position is not None
                start_lsn = max(int(position.get("lsn", 0)), state[1] or 0)
                self._conn = connect(cfg.dsn, replication=True)
        finally:
            conn.close()
        self._start_streaming(start_lsn)
        return True

    def _wait_slot_inactive(self, conn: Any) -> tuple[bool, int | None] | None:
        deadline = time.monotonic() + self.config.slot_wait_s
        while True:
            state = slot_state(conn, self.config.slot)
            if state is None or not state[0]:
                return state
            if time.monotonic() > deadline:
                raise CdcError(
                    f"replication slot {self.config.slot!r} is in use by another "
                    "connection: stop that connector or choose another --slot"
                )
            time.sleep(0.1)  # polling a condition with a deadline

    def _ensure_publication(self, conn: Any, tables: list[TableInfo]) -> None:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT 1 FROM pg_publication WHERE pubname = %s", (self.config.publication,)
            )
            if cur.fetchone() is None:
                names = ", ".join(t.quoted() for t in tables)
                cur.execute(f'CREATE PUBLICATION "{self.config.publication}" FOR TABLE {names}')

    def _create_slot_and_snapshot(self, conn: Any) -> int | None:
        cfg = self.config
        rcur = self._conn.cursor()
        try:
            rcur.execute(f'CREATE_REPLICATION_SLOT "{cfg.slot}" LOGICAL pgoutput EXPORT_SNAPSHOT')
            _name, consistent_point, snapshot_name, _plugin = rcur.fetchone()
        except Exception as exc:
            raise CdcError(
                f"cannot create replication slot {cfg.slot!r}: {one_line(exc)}"
            ) from None
        lsn = _parse_lsn(consistent_point)
        try:
            return self._snapshot(conn, lsn, snapshot_name)
        except BaseException:
            # nothing half-created: a slot whose snapshot failed is dropped (an abandoned
            # one, after a stop, is kept for the next start to drop)
            conn.rollback()
            conn.autocommit = True
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None
            with contextlib.suppress(Exception):
                self._wait_slot_inactive(conn)  # its walsender ends with the connection
                with conn.cursor() as cur:
                    cur.execute("SELECT pg_drop_replication_slot(%s)", (cfg.slot,))
            raise

    def _snapshot(self, conn: Any, lsn: int, snapshot_name: str) -> int | None:
        conn.autocommit = False
        with conn.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur.execute("SET TRANSACTION SNAPSHOT %s", (snapshot_name,))
        now_ms = int(time.time() * 1000)
        tables = list(self.tables.values())
        for index, table in enumerate(tables):
            if not self._snapshot_table(conn, table, lsn, now_ms, last=index == len(tables) - 1):
                conn.rollback()
                return None
        conn.rollback()
        conn.autocommit = True
        self._flush_all("the snapshot")
        self._store_position(lsn, snapshot_completed=True)
        self._flush_all("the snapshot's position")
        self._last_end_lsn = lsn
        return lsn

    def _snapshot_table(
        self, conn: Any, table: TableInfo, lsn: int, now_ms: int, last: bool
    ) -> bool:
        """Send every row of ``table`` as ``r``; False when a stop was requested."""
        topic = topic_name(self.config.topic_prefix, table.schema, table.table)
        columns = _columns(conn, table)
        self._set_schema(table, columns)
        select_list = ", ".join('"' + name.replace('"', '""') + '"::text' for name, _, _ in columns)
        named = conn.cursor(name=f"riverbed_snapshot_{abs(hash(table.qualified))}")
        named.itersize = SNAPSHOT_FETCH_ROWS
        named.execute(f"SELECT {select_list} FROM {table.quoted()}")
        pending: tuple[Any, ...] | None = None
        for count, row in enumerate(named):
            if count % SNAPSHOT_FETCH_ROWS == 0 and self._stop is not None and self._stop.is_set():
                named.close()
                return False
            if pending is not None:
                self._snapshot_row(topic, table, columns, pending, lsn, now_ms, "true")
            pending = row
        if pending is not None:
            self._snapshot_row(
                topic, table, columns, pending, lsn, now_ms, "last" if last else "true"
            )
        named.close()
        return True

    def _snapshot_row(
        self,
        topic: str,
        table: TableInfo,
        columns: list[tuple[str, int, int]],
        row: tuple[Any, ...],
        lsn: int,
        now_ms: int,
        snapshot: str,
    ) -> None:
        if not self._snapshot_started:  # Debezium's markers: first, true..., last
            self._snapshot_started = True
            snapshot = "first" if snapshot == "true" else snapshot
        after = {
            name: render(oid, text, self.types, typmod)
            for (name, oid, typmod), text in zip(columns, row, strict=True)
        }
        source = self._source(table, now_ms, snapshot, None, lsn)
        self._send(topic, table, "r", None, after, source, position=0)
        self.sink.poll(0)

    # -- streaming ----------------------------------------------------------------------

    def _start_streaming(self, start_lsn: int) -> None:
        self._cursor = self._conn.cursor()
        try:
            self._cursor.start_replication(
                slot_name=self.config.slot,
                decode=False,
                start_lsn=start_lsn,
                options={"proto_version": "1", "publication_names": self.config.publication},
            )
        except Exception as exc:
            raise CdcError(
                f"cannot stream from slot {self.config.slot!r}: {one_line(exc)}"
            ) from None
        self._confirmed = max(self._confirmed, start_lsn)
        self._last_end_lsn = max(self._last_end_lsn, start_lsn)

    def poll_once(self) -> bool:
        """Read what the slot has (up to a batch), send it, confirm what is acknowledged."""
        import psycopg2

        moved = False
        try:
            for _ in range(1000):
                msg = self._cursor.read_message()
                if msg is None:
                    break
                self._handle(msg.data_start, pgoutput.decode(msg.payload))
                moved = True
            if not moved:
                self._advance_when_idle()
                select.select([self._cursor], [], [], 0.05)
            if self._inc is not None and self._inc.chunk is None and self._inc.queue:
                self._next_chunk()
                moved = True
            self.sink.poll(0)
            self._confirm(force=False)  # send_feedback may be what finds the session gone
        except (
            psycopg2.ProgrammingError,
            psycopg2.IntegrityError,
            psycopg2.DataError,
            psycopg2.NotSupportedError,
        ) as exc:  # not a lost session: a bug or the schema
            raise CdcError(f"PostgreSQL refused: {one_line(exc)}") from None
        except (psycopg2.Error, ValueError) as exc:  # ValueError: select on a closed socket
            self._reconnect(exc)
            return True
        return moved

    def _handle(self, lsn: int, message: pgoutput.Message | None) -> None:
        if isinstance(message, pgoutput.Relation):
            self._relations[message.relid] = message
            table = self.tables.get(f"{message.schema}.{message.table}")
            if table is not None:
                self._set_schema(table, [(c.name, c.type_oid, c.typmod) for c in message.columns])
        elif isinstance(message, pgoutput.Begin):
            self._tx = message
        elif isinstance(message, pgoutput.Commit):
            self._last_end_lsn = message.end_lsn
            self._tx = None
            self.sink.send(self.offsets.topic, [], position=message.end_lsn)
        elif isinstance(message, pgoutput.Insert | pgoutput.Update | pgoutput.Delete):
            self._row_change(lsn, message)
        elif isinstance(message, pgoutput.Truncate):
            for relid in message.relids:
                self._truncate(lsn, relid)

    def _advance_when_idle(self) -> None:
        """Between transactions, with everything acknowledged and the slot drained, move
        the position to the server's last keepalive LSN (``wal_end``: every transaction
        committed before it was already sent), so that WAL written for other tables or
        databases is not kept for this slot (Debezium's heartbeat, without the writes).
        At most once per FEEDBACK_INTERVAL_S."""
        now = time.monotonic()
        if (
            self._tx is not None
            or self.sink.in_flight()
            or now - self._last_idle_advance < FEEDBACK_INTERVAL_S
        ):
            return
        self._last_idle_advance = now
        wal_end = int(self._cursor.wal_end or 0)
        if wal_end > self._last_end_lsn:
            self._last_end_lsn = wal_end
            self.sink.send(self.offsets.topic, [], position=wal_end)

    def _on_signal(
        self, relation: pgoutput.Relation, values: tuple[pgoutput.TupleValue, ...]
    ) -> None:
        """A row inserted into the signal table: a request or one of our watermarks."""
        assert self._inc is not None
        row = {c.name: v for c, v in zip(relation.columns, values, strict=False)}
        kind, signal_id, data = row.get("type"), row.get("id"), row.get("data")
        chunk = self._inc.chunk
        if kind == "execute-snapshot" and isinstance(data, str):
            try:
                names = json.loads(data).get("data-collections", [])
            except (ValueError, AttributeError):
                log.warning("ignored signal %r: data is not a JSON object", signal_id)
                return
            wanted = [
                self.tables[n if "." in n else f"public.{n}"]
                for n in names
                if (n if "." in n else f"public.{n}") in self.tables
            ]
            log.warning("incremental snapshot of %s requested", [t.qualified for t in wanted])
            self._inc.request(wanted)
        elif chunk is not None and signal_id == f"{chunk.id}-open":
            chunk.window_open = True
        elif chunk is not None and signal_id == f"{chunk.id}-close":
            self._inc.chunk = None  # before sending: the sends below overtake nothing
            topic = topic_name(self.config.topic_prefix, chunk.table.schema, chunk.table.table)
            source = self._source(
                chunk.table,
                self._commit_ms(),
                "incremental",
                self._tx.xid if self._tx else None,
                self._last_end_lsn,
            )
            for after in chunk.rows.values():
                self._send(
                    topic, chunk.table, "r", None, after, source, position=self._last_end_lsn
                )

    def _next_chunk(self) -> None:
        """Read the next incremental snapshot chunk between its watermarks."""
        assert self._inc is not None
        if self._sql is None:
            self._sql = connect(self.config.dsn)
        head = self._inc.queue[0]
        columns = _columns(self._sql, head)

        def render_row(cols: list[tuple[str, int, int]], row: tuple[Any, ...]) -> dict[str, Any]:
            return {
                n: render(oid, text, self.types, mod)
                for (n, oid, mod), text in zip(cols, row, strict=True)
            }

        self._inc.next_chunk(self._sql, columns, render_row)

    def _relation(self, relid: int) -> tuple[pgoutput.Relation, TableInfo] | None:
        relation = self._relations.get(relid)
        if relation is None:
            raise CdcError(f"pgoutput sent a change of relation {relid} before its schema")
        table = self.tables.get(f"{relation.schema}.{relation.table}")
        return None if table is None else (relation, table)

    def _row(
        self,
        relation: pgoutput.Relation,
        values: tuple[pgoutput.TupleValue, ...],
        previous: tuple[pgoutput.TupleValue, ...] | None,
    ) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for index, (column, value) in enumerate(zip(relation.columns, values, strict=False)):
            if value is None or isinstance(value, str):
                row[column.name] = render(column.type_oid, value, self.types, column.typmod)
            elif isinstance(value, bytes):  # binary mode is never asked for
                row[column.name] = value.decode("utf-8", "replace")
            else:  # unchanged TOAST: the old image's value when sent (REPLICA IDENTITY FULL)
                old = previous[index] if previous is not None else None
                row[column.name] = (
                    render(column.type_oid, old, self.types, column.typmod)
                    if isinstance(old, str)
                    else UNAVAILABLE
                )
        return row

    def _row_change(
        self, lsn: int, message: pgoutput.Insert | pgoutput.Update | pgoutput.Delete
    ) -> None:
        if self._inc is not None:
            signal = self._relations.get(message.relid)
            if (
                signal is not None
                and f"{signal.schema}.{signal.table}" == self._inc.signal.qualified
            ):
                if isinstance(message, pgoutput.Insert):
                    self._on_signal(signal, message.new)
                return
        found = self._relation(message.relid)
        if found is None:
            return
        relation, table = found
        topic = topic_name(self.config.topic_prefix, table.schema, table.table)
        source = self._source(
            table, self._commit_ms(), "false", self._tx.xid if self._tx else None, lsn
        )
        op: Op
        if isinstance(message, pgoutput.Insert):
            op, before, after = "c", None, self._row(relation, message.new, None)
        elif isinstance(message, pgoutput.Update):
            before = None if message.old is None else self._row(relation, message.old, None)
            op, after = "u", self._row(relation, message.new, message.old)
        else:
            op, before, after = "d", self._row(relation, message.old, None), None
        self._send(topic, table, op, before, after, source, position=self._last_end_lsn)

    def _truncate(self, lsn: int, relid: int) -> None:
        found = self._relation(relid)
        if found is None:
            return
        _relation, table = found
        topic = topic_name(self.config.topic_prefix, table.schema, table.table)
        source = self._source(
            table, self._commit_ms(), "false", self._tx.xid if self._tx else None, lsn
        )
        event = ChangeEvent("t", None, None, None, source, int(time.time() * 1000))
        records = [
            (TRUNCATE_KEY, value)
            for _key, value in records_for(event, self._schemas.get(table.qualified))
        ]
        self.sink.send(topic, records, position=self._last_end_lsn)

    def _commit_ms(self) -> int:
        return self._tx.commit_ts_us // 1000 if self._tx else int(time.time() * 1000)

    def _source(
        self, table: TableInfo, ts_ms: int, snapshot: str, xid: int | None, lsn: int
    ) -> Source:
        sequence = json.dumps(
            [str(self._last_end_lsn) if self._last_end_lsn else None, str(lsn)],
            separators=(",", ":"),
        )
        return Source(
            CONNECTOR,
            self.config.topic_prefix,
            self.db,
            table.schema,
            table.table,
            ts_ms,
            snapshot,
            sequence,
            {"txId": xid, "lsn": lsn, "xmin": None},
        )

    def _send(
        self,
        topic: str,
        table: TableInfo,
        op: Op,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        source: Source,
        position: int,
    ) -> None:
        image = after if after is not None else before
        assert image is not None
        key = {name: image.get(name) for name in table.key}
        if self._inc is not None and op != "r":
            self._inc.overtaken(table, key)
        event = ChangeEvent(op, key, before, after, source, int(time.time() * 1000))
        self.sink.send(
            topic, records_for(event, self._schemas.get(table.qualified)), position=position
        )

    def _set_schema(self, table: TableInfo, columns: list[tuple[str, int, int]]) -> None:
        """Record ``table``'s Connect schema (only with ``schemas_enable``)."""
        if not self.config.schemas_enable:
            return
        types = {name: (oid, mod) for name, oid, mod in columns}
        self._schemas[table.qualified] = TableSchema(
            topic=topic_name(self.config.topic_prefix, table.schema, table.table),
            key_fields=[
                connect_field(k, oid, False, self.types, mod)
                for k in table.key
                for oid, mod in [types.get(k, (25, -1))]
            ],
            value_fields=[
                connect_field(n, oid, n not in table.key, self.types, mod)
                for n, oid, mod in columns
            ],
            source_name="io.debezium.connector.postgresql.Source",
        )

    # -- acknowledgements -----------------------------------------------------------------

    def _store_position(self, lsn: int, snapshot_completed: bool = True) -> None:
        self.offsets.store(
            self.sink,
            self._offset_key,
            {"lsn": lsn, "lsn_text": _lsn_text(lsn), "snapshot_completed": snapshot_completed},
        )

    def _flush_all(self, what: str, timeout_s: float = 120.0) -> None:
        """Wait until the broker acknowledged every send (CdcError after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while self.sink.in_flight():
            self.sink.flush(0.5)
            if time.monotonic() > deadline:
                raise CdcError(f"the broker did not acknowledge {what} within {timeout_s:.0f} s")
        self.sink.flush(30)

    def _confirm(self, force: bool) -> None:
        """Store and confirm the acknowledged LSN (at most ten times a second unless
        ``force``); a keepalive feedback at least every FEEDBACK_INTERVAL_S."""
        acknowledged = self.sink.acknowledged()
        now = time.monotonic()
        if acknowledged is None or acknowledged <= self._confirmed:
            if force or now - self._last_feedback > FEEDBACK_INTERVAL_S:
                self._feedback(self._confirmed)
            return
        if not force and now - self._last_feedback < FEEDBACK_INTERVAL_S / 10:
            return
        # the slot is the truth; the stored position only lets a restart skip further
        # (start = max(stored, slot's confirmed)), so it may be stored asynchronously
        self._store_position(acknowledged)
        self._confirmed = acknowledged
        self._feedback(acknowledged)

    def _feedback(self, lsn: int) -> None:
        self._last_feedback = time.monotonic()
        if self._cursor is not None and lsn:
            self._cursor.send_feedback(flush_lsn=lsn, force=True)

    def _reconnect(self, cause: BaseException) -> None:
        """The replication session broke (PostgreSQL restarted): flush, reconnect, resume
        after the last acknowledged transaction."""
        log.warning("replication connection lost (%s); reconnecting", one_line(cause))
        self._flush_all("the changes before the lost connection")
        acknowledged = self.sink.acknowledged()
        if acknowledged is not None and acknowledged > self._confirmed:
            self._store_position(acknowledged)
            self.sink.flush(30)
            self._confirmed = acknowledged
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = self._cursor = None
        self._tx = None
        self._relations.clear()
        if self._inc is not None:
            self._inc.abandon_chunk()
            with contextlib.suppress(Exception):
                self._sql.close()
            self._sql = None
        deadline = time.monotonic() + self.config.reconnect_timeout_s
        while True:
            try:
                self._conn = connect(self.config.dsn, replication=True)
                self._start_streaming(self._confirmed)
                log.warning("streaming again from LSN %s", _lsn_text(self._confirmed))
                return
            except CdcError:
                with contextlib.suppress(Exception):
                    self._conn.close()
                if time.monotonic() > deadline:
                    raise CdcError(
                        f"lost the replication connection ({one_line(cause)}) and "
                        f"could not reconnect within "
                        f"{self.config.reconnect_timeout_s:.0f} s"
                    ) from None
                time.sleep(0.5)  # retry interval while PostgreSQL restarts

    def close(self, timeout_s: float) -> None:
        """Flush, store and confirm what the broker acknowledged, close the session."""
        import psycopg2

        try:
            self.sink.flush(timeout_s)
            if self._cursor is not None:
                try:
                    self._confirm(force=True)
                except psycopg2.Error as exc:  # the slot keeps its older LSN: re-sent later
                    log.warning("could not confirm the last LSN to PostgreSQL: %s", one_line(exc))
        finally:
            for session in (self._conn, self._sql):
                if session is not None:
                    with contextlib.suppress(Exception):
                        session.close()
            self._conn = self._cursor = self._sql = None
