"""The SQLite side of capture: the change table, the triggers that fill it, and the atomic
install that takes the snapshot.

Objects this module creates in the captured database (nothing else is touched)::

    _riverbed_cdc_changes(seq INTEGER PRIMARY KEY AUTOINCREMENT,   -- commit order
                          tbl TEXT, op TEXT,                       -- 'r' 'c' 'u' 'd'
                          before TEXT, after TEXT,                 -- row images (below)
                          ts_ms INTEGER)                           -- when, in the database
    _riverbed_cdc_tables(tbl TEXT PRIMARY KEY, columns TEXT, key TEXT, active INTEGER)
    _riverbed_cdc_state(name TEXT PRIMARY KEY, value TEXT)         -- install_id, snapshot seqs
    triggers _riverbed_cdc_{ins,upd,del}_<table>  AFTER INSERT/UPDATE/DELETE ON <table>

**Row images** are JSON written by the trigger: ``json_object('col', v, ...)`` where ``v``
is the column value as stored, except that a BLOB becomes ``["b", "<hex>"]`` and a REAL
``["f", "<%!.17g text>"]`` (JSON numbers written by SQLite keep only 15 digits; BLOBs
cannot be JSON).  A table with more than :data:`COLUMNS_PER_OBJECT` columns gets a JSON
array of such objects (``json_object`` takes at most 127 arguments).  :func:`decode_row`
turns an image into a JSON-ready dict (BLOB -> base64, REAL -> float).

**Ordering.**  SQLite has one writer at a time, so ``seq`` (AUTOINCREMENT, never reused
after a delete) increases in commit order: a reader that has seen ``seq = n`` will never
see a smaller one appear later (a rolled-back ``seq`` was never visible).

**Atomic install.**  :func:`install` runs in one ``BEGIN IMMEDIATE`` transaction: it creates
the tables, the triggers of each newly captured table (or of one whose columns changed)
*and* copies that table's rows into the change table as ``op = 'r'`` — so every row is
either in the snapshot or changed after it, never both or neither.  A crash anywhere rolls
the whole install back.  The snapshot rows then travel like any change: deleted only once
acknowledged.

Who calls: the connector, from one thread, on its own connection (``isolation_level=None``).
"""

from __future__ import annotations

import base64
import json
import math
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from riverbed.errors import CdcError

CHANGES = "_riverbed_cdc_changes"
TABLES = "_riverbed_cdc_tables"
STATE = "_riverbed_cdc_state"
OWN_PREFIX = "_riverbed_cdc"
COLUMNS_PER_OBJECT = 60
NOW_MS_SQL = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
TRIGGER_OPS = {"ins": ("INSERT", "c"), "upd": ("UPDATE", "u"), "del": ("DELETE", "d")}


@dataclass(frozen=True, slots=True)
class Column:
    """One column as ``PRAGMA table_info`` reports it (``pk``: 1-based position in the
    primary key, 0 when not part of it)."""

    name: str
    declared_type: str
    pk: int


@dataclass(frozen=True, slots=True)
class TableInfo:
    """A captured table's columns, in table order, and its primary-key column names."""

    name: str
    columns: tuple[Column, ...]

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(c.name for c in sorted((c for c in self.columns if c.pk), key=lambda c: c.pk))

    def signature(self) -> str:
        """What the triggers depend on, as JSON (stored in ``_riverbed_cdc_tables``)."""
        return json.dumps([[c.name, c.declared_type, c.pk] for c in self.columns])


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def user_tables(conn: sqlite3.Connection) -> list[str]:
    """Tables of the ``main`` schema that may be captured (not SQLite's, not ours)."""
    rows = conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
        "ESCAPE '\\' AND name NOT LIKE '\\_riverbed\\_cdc%' ESCAPE '\\' ORDER BY name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def table_info(conn: sqlite3.Connection, table: str) -> TableInfo | None:
    """The table's columns, or ``None`` when there is no such table."""
    rows = conn.execute(f"PRAGMA main.table_info({quote_ident(table)})").fetchall()
    if not rows:
        return None
    return TableInfo(table, tuple(Column(str(r[1]), str(r[2] or ""), int(r[5])) for r in rows))


def _value_sql(ref: str) -> str:
    return (
        f"CASE typeof({ref}) WHEN 'blob' THEN json_array('b', hex({ref})) "
        f"WHEN 'real' THEN json_array('f', printf('%!.17g', {ref})) ELSE {ref} END"
    )


def row_json_sql(info: TableInfo, alias: str) -> str:
    """SQL for the JSON image of row ``alias`` (``NEW``, ``OLD`` or a table alias)."""
    parts = [
        f"{quote_text(c.name)}, {_value_sql(f'{alias}.{quote_ident(c.name)}')}"
        for c in info.columns
    ]
    chunks = [parts[i : i + COLUMNS_PER_OBJECT] for i in range(0, len(parts), COLUMNS_PER_OBJECT)]
    objects = ["json_object(" + ", ".join(chunk) + ")" for chunk in chunks]
    return objects[0] if len(objects) == 1 else "json_array(" + ", ".join(objects) + ")"


def trigger_name(table: str, kind: str) -> str:
    return f"{OWN_PREFIX}_{kind}_{table}"


def create_triggers_sql(info: TableInfo) -> list[str]:
    """``CREATE TRIGGER`` statements for the three operations on ``info``'s table."""
    statements = []
    for kind, (event, op) in TRIGGER_OPS.items():
        before = "NULL" if kind == "ins" else row_json_sql(info, "OLD")
        after = "NULL" if kind == "del" else row_json_sql(info, "NEW")
        statements.append(
            f"CREATE TRIGGER {quote_ident(trigger_name(info.name, kind))} "
            f"AFTER {event} ON {quote_ident(info.name)} BEGIN "
            f"INSERT INTO {CHANGES} (tbl, op, before, after, ts_ms) VALUES "
            f"({quote_text(info.name)}, '{op}', {before}, {after}, {NOW_MS_SQL}); END"
        )
    return statements


def has_triggers(conn: sqlite3.Connection, table: str) -> bool:
    """Whether the three capture triggers of ``table`` exist (``DROP TABLE`` drops them)."""
    names = [trigger_name(table, kind) for kind in TRIGGER_OPS]
    found = conn.execute(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? "
        f"AND name IN ({', '.join('?' * len(names))})",
        (table, *names),
    ).fetchone()[0]
    return int(found) == len(names)


def drop_triggers(conn: sqlite3.Connection, table: str) -> None:
    for kind in TRIGGER_OPS:
        conn.execute(f"DROP TRIGGER IF EXISTS {quote_ident(trigger_name(table, kind))}")


@dataclass(frozen=True, slots=True)
class Installed:
    """What :func:`install` found or did: the change table's ``install_id`` (new when the
    change table was created), the tables captured, and rows snapshotted now."""

    install_id: str
    tables: dict[str, TableInfo]
    snapshot_rows: int


def install(conn: sqlite3.Connection, wanted: Sequence[TableInfo]) -> Installed:
    """In one ``BEGIN IMMEDIATE`` transaction: create our tables when missing; for each
    table in ``wanted`` that has no triggers (new, or dropped and created again), or whose
    columns changed since they were built, (re-)create them and snapshot its rows as
    ``op = 'r'``; drop the triggers of
    tables no longer wanted (their pending changes are still delivered)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {CHANGES} (seq INTEGER PRIMARY KEY "
            "AUTOINCREMENT, tbl TEXT NOT NULL, op TEXT NOT NULL, before TEXT, "
            "after TEXT, ts_ms INTEGER NOT NULL)"
        )
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLES} (tbl TEXT PRIMARY KEY, "
            "columns TEXT NOT NULL, key TEXT NOT NULL, active INTEGER NOT NULL)"
        )
        conn.execute(f"CREATE TABLE IF NOT EXISTS {STATE} (name TEXT PRIMARY KEY, value TEXT)")
        conn.execute(f"INSERT OR IGNORE INTO {STATE} VALUES ('install_id', ?)", (uuid.uuid4().hex,))
        install_id = str(
            conn.execute(f"SELECT value FROM {STATE} WHERE name = 'install_id'").fetchone()[0]
        )
        recorded = {
            str(r[0]): (str(r[1]), int(r[2]))
            for r in conn.execute(f"SELECT tbl, columns, active FROM {TABLES}")
        }
        wanted_names = {info.name for info in wanted}
        snapshot_rows = 0
        first_seq = last_seq = None
        for info in wanted:
            signature, active = recorded.get(info.name, ("", 0))
            if active and signature == info.signature() and has_triggers(conn, info.name):
                continue
            drop_triggers(conn, info.name)
            for statement in create_triggers_sql(info):
                conn.execute(statement)
            conn.execute(
                f"INSERT OR REPLACE INTO {TABLES} VALUES (?, ?, ?, 1)",
                (info.name, info.signature(), json.dumps(list(info.key))),
            )
            # new table: the initial snapshot; a schema change: a re-snapshot, so that every
            # key's latest event carries the new columns
            cursor = conn.execute(
                f"INSERT INTO {CHANGES} (tbl, op, before, after, ts_ms) SELECT "
                f"{quote_text(info.name)}, 'r', NULL, {row_json_sql(info, 't')}, {NOW_MS_SQL} "
                f"FROM main.{quote_ident(info.name)} AS t"
            )
            if cursor.rowcount > 0:
                snapshot_rows += cursor.rowcount
                last_seq = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
                if first_seq is None:
                    first_seq = last_seq - cursor.rowcount + 1
        for name, (_signature, active) in recorded.items():
            if active and name not in wanted_names:
                drop_triggers(conn, name)
                conn.execute(f"UPDATE {TABLES} SET active = 0 WHERE tbl = ?", (name,))
        if first_seq is not None:
            conn.executemany(
                f"INSERT OR REPLACE INTO {STATE} VALUES (?, ?)",
                [("snapshot_first_seq", str(first_seq)), ("snapshot_last_seq", str(last_seq))],
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return Installed(install_id, {info.name: info for info in wanted}, snapshot_rows)


def recorded_keys(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """Primary-key columns of every table ever captured (active or not)."""
    return {
        str(r[0]): tuple(json.loads(r[1])) for r in conn.execute(f"SELECT tbl, key FROM {TABLES}")
    }


def snapshot_bounds(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """``(first_seq, last_seq)`` of the latest snapshot, if one was taken."""
    rows = dict(
        conn.execute(f"SELECT name, value FROM {STATE} WHERE name LIKE 'snapshot_%'").fetchall()
    )
    if "snapshot_first_seq" not in rows:
        return None
    return int(rows["snapshot_first_seq"]), int(rows["snapshot_last_seq"])


def decode_value(value: Any) -> Any:
    """A stored value as JSON-ready data: BLOB -> base64 text, REAL -> float (non-finite
    -> ``None``), anything else as is."""
    if isinstance(value, list) and len(value) == 2:
        tag, text = value
        if tag == "b":
            return base64.b64encode(bytes.fromhex(text)).decode("ascii")
        if tag == "f":
            number = float(text)
            return number if math.isfinite(number) else None
    return value


def decode_row(image: str | None) -> dict[str, Any] | None:
    """A trigger's row image (module doc) as a dict of JSON-ready values."""
    if image is None:
        return None
    parsed = json.loads(image)
    objects: Iterable[dict[str, Any]] = parsed if isinstance(parsed, list) else [parsed]
    row: dict[str, Any] = {}
    for obj in objects:
        for name, value in obj.items():
            row[name] = decode_value(value)
    return row


def affinity(declared_type: str) -> str:
    """SQLite's column affinity for a declared type (the rules of "Datatypes In SQLite")."""
    upper = declared_type.upper()
    if "INT" in upper:
        return "INTEGER"
    if any(s in upper for s in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in upper or not upper:
        return "BLOB"
    if any(s in upper for s in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


CONNECT_TYPE_OF_AFFINITY = {
    "INTEGER": "int64",
    "TEXT": "string",
    "BLOB": "bytes",
    "REAL": "float64",
    "NUMERIC": "float64",
}


def require_key(info: TableInfo) -> None:
    """Refuse a table without a primary key (its events would have no key)."""
    if not info.key:
        raise CdcError(
            f"table {info.name!r} has no primary key, so its change events would have no "
            f"key; add one (e.g. an 'id INTEGER PRIMARY KEY' column) or leave the table out "
            f"with --table"
        )
