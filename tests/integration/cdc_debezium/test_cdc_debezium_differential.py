"""Differential with Debezium itself (issue 11): one seeded workload on one PostgreSQL
cluster, captured at once by Debezium's PostgreSQL connector (embedded engine 3.6.1.Final,
``riverbed.testing.debezium_embedded``) and by ``riverbed cdc postgres`` (separate slots and
publications), must give the same events per table per key: key, op, before, after, and
their order (tombstones included).  ``source``, ``ts_ms`` and Debezium's ``transaction``
field are not compared (timestamps and connector metadata differ by design).

The workload: inserts, non-key updates, deletes, key changes (composite key), rolled-back
transactions and multi-statement transactions over int, bigint, text, numeric, boolean,
timestamp, timestamptz, date, json, jsonb, uuid, bytea and arrays, NULLs included; one table
with ``REPLICA IDENTITY FULL`` so that old images are compared too.

Skips when PostgreSQL, Java or Maven is missing; the first run downloads Debezium from Maven
Central (~15 s with a warm ~/.m2).  ~30-60 s on a loaded machine (two JVM/connector starts).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import shutil
import sys
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing.child_process import ChildProcess
from riverbed.testing.debezium_embedded import (
    CaptureBuild,
    DebeziumCapture,
    DebeziumError,
    engine_properties,
    ensure_capture,
)
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.json_topic import read_json_topic
from riverbed.testing.postgres_cluster import (
    SUPERUSER,
    SUPERUSER_PASSWORD,
    PostgresCluster,
    postgres_bin_dir,
)
from riverbed.testing.waiting import wait_until

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "cdc", "postgres"]
DBZ_PREFIX = "dbz"

DDL = [
    """CREATE TABLE t_types (
        id integer PRIMARY KEY, big bigint, txt text, num numeric(14,3), flag boolean,
        ts timestamp, tstz timestamptz, d date, j json, jb jsonb, u uuid, b bytea,
        ints integer[], txts text[])""",
    "CREATE TABLE t_composite (region text, k integer, val text, PRIMARY KEY (region, k))",
    "CREATE TABLE t_full (id bigint PRIMARY KEY, note text, amount numeric, at timestamptz)",
    "ALTER TABLE t_full REPLICA IDENTITY FULL",
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
    """CREATE TABLE t_more (
        id integer PRIMARY KEY, sm smallint, r real, dp double precision, t time, ttz timetz,
        iv interval, m money, n numeric, vc varchar(10), ch char(3), mo mood, ts timestamp,
        d date, tstz3 timestamptz(3), tstz_arr timestamptz[], num_arr numeric[],
        bool_arr boolean[], grid integer[][], big text)""",
]
TABLES = ["public.t_types", "public.t_composite", "public.t_full", "public.t_more"]
MORE_COLS = (
    "sm, r, dp, t, ttz, iv, m, n, vc, ch, mo, ts, d, tstz3, tstz_arr, num_arr, bool_arr, grid"
)


# --- the workload -----------------------------------------------------------------------


def _maybe(rng: random.Random, value: Any) -> Any:
    return None if rng.random() < 0.1 else value


def _types_row(rng: random.Random, key: int) -> tuple[Any, ...]:
    base = dt.datetime(2024, 1, 1) + dt.timedelta(
        seconds=rng.randrange(-(10**9), 10**9),
        microseconds=rng.choice([0, 250000, rng.randrange(10**6)]),
    )
    return (
        key,
        _maybe(rng, rng.randrange(-(2**62), 2**62)),
        _maybe(rng, rng.choice(["", "ann", "bé ☃", 'quote"s', "a\nb", "x" * rng.randrange(50)])),
        _maybe(rng, decimal.Decimal(rng.randrange(-(10**12), 10**12)).scaleb(-3)),
        _maybe(rng, rng.random() < 0.5),
        _maybe(rng, base),
        _maybe(rng, base.replace(tzinfo=dt.timezone(dt.timedelta(hours=rng.randrange(-12, 13))))),
        _maybe(rng, dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-30000, 30000))),
        _maybe(rng, json.dumps({"a": rng.randrange(100), "b": [1, "x", None]})),
        _maybe(rng, json.dumps({"k": rng.random() < 0.5, "n": {"m": rng.randrange(10)}})),
        _maybe(rng, str(uuid.UUID(int=rng.getrandbits(128)))),
        _maybe(rng, bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 20)))),
        _maybe(rng, [rng.randrange(-1000, 1000) for _ in range(rng.randrange(0, 4))]),
        _maybe(rng, [rng.choice(["a", "b c", "d,e", ""]) for _ in range(rng.randrange(0, 3))]),
    )


# values as SQL text literals for the types psycopg2 does not adapt (each cast explicitly)
_MORE_SQL = (
    "%s, %s::real, %s::double precision, %s::time, %s::timetz, %s::interval, %s::money,"
    " %s::numeric, %s, %s, %s::mood, %s::timestamp, %s::date, %s::timestamptz,"
    " %s::timestamptz[], %s::numeric[], %s::boolean[], %s::integer[]"
)


def _more_values(rng: random.Random) -> tuple[Any, ...]:
    def pick(*options: Any) -> Any:
        return _maybe(rng, rng.choice(options))

    return (
        pick(0, -32768, 32767, rng.randrange(-999, 999)),
        pick("1.5", "-0.25", "NaN", "Infinity", "-Infinity", "3.4e38", "1e-30"),
        pick("0.1", "-1e300", "NaN", "Infinity", "2.718281828459045", "5e-324"),
        pick("00:00:00", "23:59:59.999999", "12:30:00.5", "08:00:01.000123"),
        pick("10:00:00+02", "23:30:00.25-05:30", "00:00:00+00", "12:00:00.123456+14"),
        pick("1 day", "-3 hours", "1 mon 2 days 03:04:05.5", "1 year", "P1Y2M3DT4H5M6.789S"),
        pick("12.50", "-0.01", "92233720368547758.07", "0"),
        pick("12.50", "NaN", "-0.000001", "1e20", "123456789012345678901234567890.123"),
        pick("", "abc", "ten chars!"),
        pick("a", "ab", "abc"),
        pick("sad", "ok", "happy"),
        pick("infinity", "-infinity", "2024-02-29 23:59:59.999999", "1900-01-01 00:00:00"),
        pick("infinity", "-infinity", "2024-02-29", "0001-01-01"),
        pick("2024-05-01 12:00:00.123+02", "2024-05-01 12:00:00+00", "infinity"),
        pick("{}", '{"2024-05-01 12:00:00+00","2024-05-01 12:00:00.5+03",NULL}'),
        pick("{}", "{1.50,NaN,-3,NULL}", "{0.001}"),
        pick("{}", "{t,f,NULL}"),
        pick("{{1,2},{3,4}}", "{{NULL,5}}", "{}", "{7}"),
    )


TYPES_COLS = "id, big, txt, num, flag, ts, tstz, d, j, jb, u, b, ints, txts"


class Workload:
    """A seeded sequence of transactions; counts the events each table's topic should get
    (insert 1, update 1, delete 2 with its tombstone, key change 3)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.expected: dict[str, int] = defaultdict(int)
        self.types_keys: set[int] = set()
        self.comp_keys: set[tuple[str, int]] = set()
        self.full_keys: set[int] = set()
        self.more_keys: set[int] = set()
        self.next_id = 1

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def statement(self, cur: Any, counts: dict[str, int]) -> None:
        rng = self.rng
        table = rng.choice(["t_types", "t_types", "t_composite", "t_full", "t_more"])
        if table == "t_more":
            mkeys = self.more_keys
            choice = rng.random()
            if not mkeys or choice < 0.5:
                key = self._new_id()
                big = "".join(rng.choice("abcdefghij0123456789") for _ in range(9000))
                cur.execute(
                    f"INSERT INTO t_more (id, {MORE_COLS}, big) VALUES (%s, {_MORE_SQL}, %s)",
                    (key, *_more_values(rng), big),
                )
                mkeys.add(key)
                counts["t_more"] += 1
            elif choice < 0.85:
                key = rng.choice(sorted(mkeys))
                sets = ", ".join(
                    f"{c} = {s}"
                    for c, s in zip(MORE_COLS.split(", "), _MORE_SQL.split(", "), strict=True)
                )
                cur.execute(f"UPDATE t_more SET {sets} WHERE id = %s", (*_more_values(rng), key))
                counts["t_more"] += 1
            else:
                key = rng.choice(sorted(mkeys))
                cur.execute("DELETE FROM t_more WHERE id = %s", (key,))
                mkeys.discard(key)
                counts["t_more"] += 2
        elif table == "t_types":
            keys = self.types_keys
            choice = rng.random()
            if not keys or choice < 0.5:
                key = self._new_id()
                row = _types_row(rng, key)
                cur.execute(
                    f"INSERT INTO t_types ({TYPES_COLS}) VALUES ({', '.join(['%s'] * 14)})", row
                )
                keys.add(key)
                counts["t_types"] += 1
            elif choice < 0.8:
                key = rng.choice(sorted(keys))
                row = _types_row(rng, key)
                sets = ", ".join(f"{c} = %s" for c in TYPES_COLS.split(", ")[1:])
                cur.execute(f"UPDATE t_types SET {sets} WHERE id = %s", (*row[1:], key))
                counts["t_types"] += 1
            else:
                key = rng.choice(sorted(keys))
                cur.execute("DELETE FROM t_types WHERE id = %s", (key,))
                keys.discard(key)
                counts["t_types"] += 2
        elif table == "t_composite":
            ckeys = self.comp_keys
            choice = rng.random()
            val = _maybe(rng, f"v{rng.randrange(1000)}")
            if not ckeys or choice < 0.45:
                ckey = (rng.choice(["eu", "us", "ap"]), self._new_id())
                cur.execute("INSERT INTO t_composite VALUES (%s, %s, %s)", (*ckey, val))
                ckeys.add(ckey)
                counts["t_composite"] += 1
            elif choice < 0.7:
                ckey = rng.choice(sorted(ckeys))
                cur.execute(
                    "UPDATE t_composite SET val = %s WHERE region = %s AND k = %s", (val, *ckey)
                )
                counts["t_composite"] += 1
            elif choice < 0.85:
                old = rng.choice(sorted(ckeys))
                new = (rng.choice(["eu", "us", "ap"]), self._new_id())
                cur.execute(
                    "UPDATE t_composite SET region = %s, k = %s WHERE region = %s AND k = %s",
                    (*new, *old),
                )
                ckeys.discard(old)
                ckeys.add(new)
                counts["t_composite"] += 3
            else:
                ckey = rng.choice(sorted(ckeys))
                cur.execute("DELETE FROM t_composite WHERE region = %s AND k = %s", ckey)
                ckeys.discard(ckey)
                counts["t_composite"] += 2
        else:
            fkeys = self.full_keys
            choice = rng.random()
            amount = _maybe(
                rng, decimal.Decimal(rng.randrange(-(10**8), 10**8)).scaleb(-rng.randrange(0, 6))
            )
            at = _maybe(
                rng,
                dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
                + dt.timedelta(microseconds=rng.randrange(10**12)),
            )
            if not fkeys or choice < 0.5:
                key = self._new_id() * 1_000_000_007
                cur.execute(
                    "INSERT INTO t_full VALUES (%s, %s, %s, %s)", (key, f"n{key}", amount, at)
                )
                fkeys.add(key)
                counts["t_full"] += 1
            elif choice < 0.8:
                key = rng.choice(sorted(fkeys))
                cur.execute(
                    "UPDATE t_full SET amount = %s, at = %s WHERE id = %s", (amount, at, key)
                )
                counts["t_full"] += 1
            else:
                key = rng.choice(sorted(fkeys))
                cur.execute("DELETE FROM t_full WHERE id = %s", (key,))
                fkeys.discard(key)
                counts["t_full"] += 2

    def run(self, conn: Any, transactions: int) -> None:
        """``transactions`` transactions of 1-4 statements; ~15% roll back (their key
        bookkeeping is restored)."""
        for _ in range(transactions):
            snapshot = (
                set(self.types_keys),
                set(self.comp_keys),
                set(self.full_keys),
                set(self.more_keys),
            )
            counts: dict[str, int] = defaultdict(int)
            with conn.cursor() as cur:
                for _ in range(self.rng.randrange(1, 5)):
                    self.statement(cur, counts)
            if self.rng.random() < 0.15:
                conn.rollback()
                self.types_keys, self.comp_keys, self.full_keys, self.more_keys = snapshot
            else:
                conn.commit()
                for table, n in counts.items():
                    self.expected[table] += n


# --- reading both sides -----------------------------------------------------------------


def _column(col: str, value: Any, debezium: bool) -> Any:
    """One column's value with the deliberate differences (docs/cdc.md, "Differences from
    Debezium") folded away, so that everything else is compared exactly."""
    if debezium and value == "NAN":  # numeric NaN: Debezium "NAN", we PostgreSQL's "NaN"
        return "NaN"
    # ±infinity: our strings; Debezium's overflowed numbers
    if col in ("d", "ts") and (
        value in ("infinity", "-infinity")
        or (isinstance(value, int) and abs(value) >= (2**31 - 20000 if col == "d" else 2**62))
    ):
        return "<infinite>"
    # multi-dimensional arrays: Debezium sends one null per row, we nested arrays
    if (
        col == "grid"
        and isinstance(value, list)
        and value
        and (all(v is None for v in value) or any(isinstance(v, list) for v in value))
    ):
        return "<multi-dimensional>"
    if col == "num_arr" and isinstance(value, list) and "NaN" in value:
        return None  # a numeric[] holding NaN: Debezium sends null for the whole array
    return value


def normalise(value: Any, debezium: bool = False) -> Any:
    """What is compared of an event: op, before, after (None for a tombstone)."""
    if value is None:
        return None

    def image(row: Any) -> Any:
        if row is None:
            return None
        return {col: _column(col, v, debezium) for col, v in row.items()}

    return {"op": value["op"], "before": image(value["before"]), "after": image(value["after"])}


def per_key(records: list[tuple[Any, Any]], debezium: bool = False) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    for key, value in records:
        out[json.dumps(key)].append(normalise(value, debezium))
    return dict(out)


def _field_diff(a: Any, b: Any) -> str:
    """The differing fields of two normalised events (whole events when not both dicts)."""
    if not (isinstance(a, dict) and isinstance(b, dict)) or a["op"] != b["op"]:
        return f"riverbed: {a}\n  debezium: {b}"
    parts = []
    for image in ("before", "after"):
        ia, ib = a[image], b[image]
        if isinstance(ia, dict) and isinstance(ib, dict):
            for col in sorted(set(ia) | set(ib)):
                if ia.get(col, "<absent>") != ib.get(col, "<absent>"):
                    parts.append(
                        f"{image}.{col}: riverbed {ia.get(col, '<absent>')!r}"
                        f" debezium {ib.get(col, '<absent>')!r}"
                    )
        elif ia != ib:
            parts.append(f"{image}: riverbed {ia!r} debezium {ib!r}")
    return "; ".join(parts)


def diff_report(table: str, ours: dict[str, list[Any]], theirs: dict[str, list[Any]]) -> list[str]:
    """One line per key whose sequences differ: its first differing event."""
    lines = []
    for key in sorted(set(ours) | set(theirs)):
        a, b = ours.get(key, []), theirs.get(key, [])
        for i in range(max(len(a), len(b))):
            ea = a[i] if i < len(a) else "<missing>"
            eb = b[i] if i < len(b) else "<missing>"
            if ea != eb:
                lines.append(f"{table} key {key} event #{i}: {_field_diff(ea, eb)}")
                break
    return lines


def _engine_properties(
    pg: PostgresCluster, dbname: str, tables: list[str], extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The embedded Debezium engine's properties for ``tables`` of ``dbname``: topic prefix
    ``DBZ_PREFIX``, its own slot and publication (named after the database), ``extra`` over
    them."""
    return engine_properties(
        host="127.0.0.1",
        port=pg.port,
        user=SUPERUSER,
        password=SUPERUSER_PASSWORD,
        dbname=dbname,
        tables=tables,
        topic_prefix=DBZ_PREFIX,
        slot=f"dbz_{dbname}",
        publication=f"dbz_pub_{dbname}",
        extra=extra,
    )


def slot_exists(dsn: str, slot: str) -> bool:
    """The slot exists with a consistent point: every later commit will be decoded."""
    import psycopg2

    conn = psycopg2.connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s"
                " AND confirmed_flush_lsn IS NOT NULL",
                (slot,),
            )
            return cur.fetchone() is not None
    finally:
        conn.close()


# --- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL binaries not installed (scripts/setup: apt-get install postgresql)")
    cluster = PostgresCluster.create(tmp_path_factory.mktemp("pg"))
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def capture_build() -> CaptureBuild:
    """The embedded Debezium engine's build (skips when Java/Maven is missing or it fails)."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("java/mvn not installed")
    try:
        return ensure_capture()
    except DebeziumError as exc:
        pytest.skip(f"Debezium could not be built: {exc}")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("broker")) as running:
        yield running


def _differential(
    pg: PostgresCluster,
    broker: EmbeddedBroker,
    build: CaptureBuild,
    tmp_path: Path,
    seed: int,
    transactions: int,
) -> None:

    dbname = pg.create_database()
    try:
        _compare(pg, broker, tmp_path, seed, transactions, build, dbname)
    finally:
        # the module's cluster has 10 slots: free this test's two and its database
        pg.drop_database(dbname)


def _compare(
    pg: PostgresCluster,
    broker: EmbeddedBroker,
    tmp_path: Path,
    seed: int,
    transactions: int,
    build: CaptureBuild,
    dbname: str,
) -> None:
    import psycopg2

    rb_prefix = f"rb_{dbname}"  # the broker is shared by the module's tests
    conn = psycopg2.connect(pg.dsn(dbname=dbname))
    with conn.cursor() as cur:
        for ddl in DDL:
            cur.execute(ddl)
    conn.commit()

    props = _engine_properties(pg, dbname, TABLES)
    rb = ChildProcess(
        tmp_path / "riverbed.log",
        [
            *ENTRY,
            "--dsn",
            pg.dsn(dbname=dbname),
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--topic-prefix",
            rb_prefix,
            "--slot",
            f"rb_{dbname}",
            "--publication",
            f"rb_pub_{dbname}",
            *[arg for table in TABLES for arg in ("--table", table)],
        ],
    )
    with DebeziumCapture(build, props, tmp_path / "debezium") as dbz:
        try:
            rb.start()
            dbz.start()
            for slot in (f"rb_{dbname}", f"dbz_{dbname}"):
                wait_until(lambda s=slot: slot_exists(pg.dsn(), s), 120, f"slot {slot}")

            workload = Workload(seed)
            workload.run(conn, transactions)

            def dbz_by_table() -> dict[str, list[tuple[Any, Any]]]:
                out: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
                for topic, key, value in dbz.events():
                    out[topic.split(".")[-1]].append((key, value))
                return out

            def complete() -> bool:
                got = dbz_by_table()
                return all(len(got.get(t, [])) >= n for t, n in workload.expected.items())

            wait_until(
                complete, 120, f"Debezium's events {dict(workload.expected)}:\n{dbz.log_tail()}"
            )
            ours: dict[str, list[tuple[Any, Any]]] = {}

            def rb_complete() -> bool:
                for table, n in workload.expected.items():
                    ours[table] = read_json_topic(
                        broker.bootstrap_servers, f"{rb_prefix}.public.{table}"
                    )
                    if len(ours[table]) < n:
                        return False
                return True

            wait_until(rb_complete, 120, f"riverbed's events {dict(workload.expected)}")
            rb.assert_alive()
        finally:
            rb.close()
        theirs = dbz_by_table()
        problems = []
        for table, n in workload.expected.items():
            assert len(theirs[table]) == n, (table, len(theirs[table]), n)
            assert len(ours[table]) == n, (table, len(ours[table]), n)
            problems += diff_report(
                table, per_key(ours[table]), per_key(theirs[table], debezium=True)
            )
        assert not problems, "\n".join(problems[:20])
    conn.close()


def test_same_events_as_debezium(
    pg: PostgresCluster, broker: EmbeddedBroker, capture_build: CaptureBuild, tmp_path: Path
) -> None:
    """The reduced form, in the default suite (~15 s): one seed, 300 transactions."""
    _differential(pg, broker, capture_build, tmp_path, seed=11, transactions=300)


@pytest.mark.debezium
@pytest.mark.parametrize("seed", range(12, 18))
def test_same_events_as_debezium_long(
    pg: PostgresCluster,
    broker: EmbeddedBroker,
    capture_build: CaptureBuild,
    tmp_path: Path,
    seed: int,
) -> None:
    """Six more seeds of 1500 transactions each (~2-3 min): ``-m debezium``."""
    _differential(pg, broker, capture_build, tmp_path, seed=seed, transactions=1500)


# --- snapshot, schema changes, TRUNCATE -------------------------------------------------

DDL_SCENARIO_TABLES = ["public.s_main", "public.s_other"]


def _ddl_workload(cur: Any, expected: dict[str, int]) -> None:
    """Changes around ADD COLUMN, DROP COLUMN, a type change and TRUNCATE (each statement
    autocommitted); counts the events per table as :class:`Workload` does (a TRUNCATE: 1)."""

    def run(table: str, events: int, sql: str, args: tuple[Any, ...] = ()) -> None:
        cur.execute(sql, args or None)
        expected[table] += events

    run("s_main", 1, "UPDATE s_main SET v = 'u1' WHERE id = 1")
    cur.execute("ALTER TABLE s_main ADD COLUMN extra integer DEFAULT 7")
    run("s_main", 1, "INSERT INTO s_main (id, v, n, extra) VALUES (101, 'a', 1.5, 8)")
    run("s_main", 1, "UPDATE s_main SET extra = 9 WHERE id = 2")
    run("s_main", 1, "INSERT INTO s_main (id, v) VALUES (102, 'default extra')")
    cur.execute(
        "ALTER TABLE s_main ADD COLUMN at timestamptz(2) DEFAULT '2025-01-01 00:00:00.1+00'"
    )
    run("s_main", 1, "UPDATE s_main SET at = '2025-03-04 05:06:07.89+00' WHERE id = 3")
    run("s_main", 2, "DELETE FROM s_main WHERE id = 4")
    cur.execute("ALTER TABLE s_main DROP COLUMN v")
    run("s_main", 1, "INSERT INTO s_main (id, n) VALUES (103, 2.25)")
    run("s_main", 1, "UPDATE s_main SET n = 3 WHERE id = 5")
    run("s_main", 2, "DELETE FROM s_main WHERE id = 6")
    cur.execute("ALTER TABLE s_main ALTER COLUMN n TYPE text USING n::text")
    run("s_main", 1, "INSERT INTO s_main (id, n) VALUES (104, 'now text')")
    run("s_main", 1, "UPDATE s_main SET n = 'changed' WHERE id = 7")
    cur.execute("ALTER TABLE s_main ALTER COLUMN extra TYPE bigint")
    run("s_main", 1, "UPDATE s_main SET extra = 5000000000 WHERE id = 8")
    run("s_other", 1, "INSERT INTO s_other VALUES (100, 'before truncate')")
    run("s_other", 1, "TRUNCATE s_other")
    run("s_other", 1, "INSERT INTO s_other VALUES (1, 'after truncate')")
    run("s_other", 1, "UPDATE s_other SET w = 'again' WHERE k = 1")


def test_snapshot_schema_changes_truncate_as_debezium(
    pg: PostgresCluster, broker: EmbeddedBroker, capture_build: CaptureBuild, tmp_path: Path
) -> None:
    """Both connectors snapshot the same rows (Debezium ``snapshot.mode=initial``), then
    stream changes around ``ADD COLUMN`` (with a default), ``DROP COLUMN``, type changes
    (numeric -> text, integer -> bigint) and a ``TRUNCATE`` (Debezium with
    ``skipped.operations=none``): the same events per key (~20 s).  Folded or configured
    away, as docs/cdc.md lists: the truncate event's key (ours ``{}``, Debezium's null), and
    JsonConverter's ``replace.null.with.default`` (set false here; at its default, true,
    Debezium writes a column's DEFAULT where the value is null, e.g. the non-key columns of
    a key-only delete image, where we write null)."""
    import psycopg2

    dbname = pg.create_database()
    conn = psycopg2.connect(pg.dsn(dbname=dbname))
    conn.autocommit = True
    expected: dict[str, int] = defaultdict(int)
    with conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE s_main (id integer PRIMARY KEY, v text, n numeric(8,2),"
            " ts timestamp(3), tz timestamptz(0))"
        )
        cur.execute("CREATE TABLE s_other (k integer PRIMARY KEY, w text)")
        for i in range(1, 21):
            cur.execute(
                "INSERT INTO s_main VALUES (%s, %s, %s, '2024-05-06 07:08:09.123', now())",
                (i, f"row {i}", decimal.Decimal(i).scaleb(-1)),
            )
            expected["s_main"] += 1
        for k in range(1, 4):
            cur.execute("INSERT INTO s_other VALUES (%s, %s)", (k, f"w{k}"))
            expected["s_other"] += 1
    props = _engine_properties(
        pg,
        dbname,
        DDL_SCENARIO_TABLES,
        {
            "snapshot.mode": "initial",
            "skipped.operations": "none",
            "converter.replace.null.with.default": "false",
            "value.converter.replace.null.with.default": "false",
        },
    )
    rb_prefix = f"rb_{dbname}"
    rb = ChildProcess(
        tmp_path / "riverbed.log",
        [
            *ENTRY,
            *("--dsn", pg.dsn(dbname=dbname), "--bootstrap-server", broker.bootstrap_servers),
            *("--topic-prefix", rb_prefix, "--slot", f"rb_{dbname}"),
            *("--publication", f"rb_pub_{dbname}"),
            *[arg for table in DDL_SCENARIO_TABLES for arg in ("--table", table)],
        ],
    )
    try:
        with DebeziumCapture(capture_build, props, tmp_path / "debezium") as dbz:

            def dbz_by_table() -> dict[str, list[tuple[Any, Any]]]:
                out: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
                for topic, key, value in dbz.events():
                    out[topic.split(".")[-1]].append((key, value))
                return out

            ours: dict[str, list[tuple[Any, Any]]] = {}

            def both_have(counts: dict[str, int]) -> bool:
                got = dbz_by_table()
                for table, n in counts.items():
                    ours[table] = read_json_topic(
                        broker.bootstrap_servers, f"{rb_prefix}.public.{table}"
                    )
                    if len(ours[table]) < n or len(got.get(table, [])) < n:
                        return False
                return True

            try:
                rb.start()
                dbz.start()
                # both snapshots complete before anything changes
                wait_until(lambda: both_have(dict(expected)), 120, "both snapshots")
                with conn.cursor() as cur:
                    _ddl_workload(cur, expected)
                wait_until(
                    lambda: both_have(dict(expected)),
                    120,
                    f"both connectors' events {dict(expected)}:\n{dbz.log_tail()}",
                )
                rb.assert_alive()
            finally:
                rb.close()
            theirs = dbz_by_table()
        problems = []
        for table, n in expected.items():
            assert len(theirs[table]) == n, (table, len(theirs[table]), n, theirs[table][-3:])
            assert len(ours[table]) == n, (table, len(ours[table]), n)
            mine = ours[table]
            # the truncate event's key: ours {} (a compacted topic refuses a null key)
            dbz_events = [({} if k is None else k, v) for k, v in theirs[table]]
            problems += diff_report(table, per_key(mine), per_key(dbz_events, debezium=True))
        assert not problems, "\n".join(problems[:20])
    finally:
        conn.close()
        pg.drop_database(dbname)
