"""Checks and catalog reads a PostgreSQL connector does before it creates anything.

:func:`connect` opens a session with the settings :mod:`.values` parses
(``session_options``); :func:`check_source` then verifies, in this order, and raises
:class:`~riverbed.errors.CdcError` with a one-line message naming the fix:

1. ``wal_level`` is ``logical``;
2. the role may replicate (``REPLICATION`` or superuser);
3. every captured table exists and has a primary key, or ``REPLICA IDENTITY FULL`` (then
   every column is the key);
4. the slot's name is valid and the slot, if it exists, uses ``pgoutput``;
5. the role may read every captured table;
6. the publication, if it exists, publishes every captured table; if not, the role may
   create it (CREATE on the database, owner of the tables, or superuser).

Nothing is created here, so a refused start leaves no slot, publication or topic behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from riverbed.cdc.postgres.values import session_options
from riverbed.errors import CdcError

__all__ = ["TableInfo", "check_source", "connect", "one_line"]


@dataclass(frozen=True, slots=True)
class TableInfo:
    """A captured table: ``key`` lists the key columns in key order."""

    schema: str
    table: str
    key: tuple[str, ...]

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.table}"

    def quoted(self) -> str:
        return ".".join('"' + part.replace('"', '""') + '"' for part in (self.schema, self.table))


def one_line(exc: BaseException) -> str:
    """A driver error as one line (libpq messages span several)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__


def connect(dsn: str, *, replication: bool = False) -> Any:
    """A psycopg2 connection (``LogicalReplicationConnection`` when ``replication``), or
    :class:`CdcError` with libpq's reason (wrong host, password, database)."""
    import psycopg2
    import psycopg2.extensions
    import psycopg2.extras

    try:
        full = psycopg2.extensions.make_dsn(dsn, options=session_options())
        if replication:
            return psycopg2.connect(
                full, connection_factory=psycopg2.extras.LogicalReplicationConnection
            )
        conn = psycopg2.connect(full)
        conn.autocommit = True
        return conn
    except psycopg2.ProgrammingError as exc:  # an unparsable DSN
        raise CdcError(f"invalid --dsn: {one_line(exc)}") from None
    except psycopg2.OperationalError as exc:
        raise CdcError(f"cannot connect to PostgreSQL: {one_line(exc)}") from None


def _query(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, args or None)
        return list(cur.fetchall())


_TABLES_SQL = """
SELECT n.nspname, c.relname, c.relreplident,
       ARRAY(SELECT a.attname::text FROM pg_index i
             JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) ON true
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
             WHERE i.indrelid = c.oid AND i.indisprimary ORDER BY k.ord),
       ARRAY(SELECT a.attname::text FROM pg_attribute a
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
             ORDER BY a.attnum)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
"""


def _tables(conn: Any, wanted: list[str]) -> list[TableInfo]:
    rows = {
        f"{schema}.{table}": (schema, table, ident, pk, cols)
        for schema, table, ident, pk, cols in _query(conn, _TABLES_SQL)
    }
    names = wanted or sorted(rows)
    if not names:
        raise CdcError("no table to capture: the database has no user tables (--table)")
    tables = []
    for name in names:
        qualified = name if "." in name else f"public.{name}"
        if qualified not in rows:
            raise CdcError(f"table {qualified!r} does not exist (--table SCHEMA.TABLE)")
        schema, table, ident, pk, cols = rows[qualified]
        if pk:
            tables.append(TableInfo(schema, table, tuple(pk)))
        elif ident == "f":
            tables.append(TableInfo(schema, table, tuple(cols)))
        else:
            raise CdcError(
                f"table {qualified!r} has no primary key: add one, or run "
                f"ALTER TABLE {qualified} REPLICA IDENTITY FULL (every column becomes the key)"
            )
    return tables


def check_source(
    conn: Any,
    wanted_tables: list[str],
    slot: str,
    publication: str,
    signal_table: str | None = None,
) -> list[TableInfo]:
    """Verify the database can be captured (module doc); return the tables to capture,
    the signal table (checked like them) last when there is one."""
    if not re.fullmatch(r"[a-z0-9_]{1,63}", slot):
        raise CdcError(
            f"invalid --slot {slot!r}: use lower-case letters, digits and underscores (at most 63)"
        )
    ((wal_level,),) = _query(conn, "SHOW wal_level")
    if wal_level != "logical":
        raise CdcError(
            f"wal_level is {wal_level!r}, logical decoding needs 'logical': run ALTER SYSTEM "
            "SET wal_level = logical (or set it in postgresql.conf) and restart PostgreSQL"
        )
    ((user, may_replicate),) = _query(
        conn,
        "SELECT current_user, rolreplication OR rolsuper FROM pg_roles "
        "WHERE rolname = current_user",
    )
    if not may_replicate:
        raise CdcError(
            f"role {user!r} has no REPLICATION privilege: run "
            f"ALTER ROLE {user} WITH REPLICATION (as a superuser)"
        )
    tables = _tables(conn, wanted_tables)
    if signal_table is not None:
        (signal,) = _tables(conn, [signal_table])
        tables = [t for t in tables if t.qualified != signal.qualified] + [signal]
    for (plugin,) in _query(
        conn, "SELECT plugin FROM pg_replication_slots WHERE slot_name = %s", (slot,)
    ):
        if plugin != "pgoutput":
            raise CdcError(
                f"replication slot {slot!r} uses the {plugin!r} plugin, not "
                "pgoutput: choose another --slot"
            )
    for table in tables:
        ((may_select,),) = _query(
            conn, "SELECT has_table_privilege(%s, 'SELECT')", (table.quoted(),)
        )
        if not may_select:
            raise CdcError(
                f"role {user!r} may not read {table.qualified!r}: run "
                f"GRANT SELECT ON {table.qualified} TO {user}"
            )
    if not _query(conn, "SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)):
        _check_may_create_publication(conn, user, tables, publication)
        return tables
    published = {
        f"{schema}.{table}"
        for schema, table in _query(
            conn,
            "SELECT schemaname::text, tablename::text FROM pg_publication_tables "
            "WHERE pubname = %s",
            (publication,),
        )
    }
    for table in tables:
        if table.qualified not in published:
            raise CdcError(
                f"publication {publication!r} does not publish "
                f"{table.qualified!r}: run ALTER PUBLICATION {publication} "
                f"ADD TABLE {table.qualified}, or choose another --publication"
            )
    return tables


def _check_may_create_publication(
    conn: Any, user: str, tables: list[TableInfo], publication: str
) -> None:
    """CREATE PUBLICATION ... FOR TABLE needs CREATE on the database and ownership of
    every table (or superuser)."""
    ((superuser, may_create),) = _query(
        conn,
        "SELECT rolsuper, has_database_privilege(current_database(), 'CREATE') "
        "FROM pg_roles WHERE rolname = current_user",
    )
    if superuser:
        return
    not_owned = [
        t.qualified
        for t in tables
        if not _query(
            conn,
            "SELECT 1 FROM pg_class c WHERE c.oid = %s::regclass "
            "AND pg_has_role(current_user, c.relowner, 'USAGE')",
            (t.quoted(),),
        )
    ]
    if not may_create or not_owned:
        names = ", ".join(t.qualified for t in tables)
        raise CdcError(
            f"role {user!r} cannot create publication {publication!r} (it needs "
            "CREATE on the database and to own the tables): have the tables' owner "
            f"run CREATE PUBLICATION {publication} FOR TABLE {names}"
        )


def slot_state(conn: Any, slot: str) -> tuple[bool, int | None] | None:
    """``(active, confirmed_flush_lsn)`` of ``slot``, or None when it does not exist."""
    rows = _query(
        conn,
        "SELECT active, confirmed_flush_lsn - '0/0'::pg_lsn "
        "FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    )
    if not rows:
        return None
    active, lsn = rows[0]
    return bool(active), None if lsn is None else int(lsn)


def array_elements(conn: Any) -> dict[int, int]:
    """Every array type's element type (``pg_type.typelem``), user types included."""
    return {
        int(oid): int(elem)
        for oid, elem in _query(
            conn,
            "SELECT oid::int8, typelem::int8 FROM pg_type WHERE typcategory = 'A' AND typelem <> 0",
        )
    }
