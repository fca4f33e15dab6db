"""Kafka Connect 4.4.0 in distributed mode, its config/offset/status topics on Riverbed,
running Debezium's PostgreSQL connector 3.6.1.Final (registered over Connect's REST API)
into Riverbed topics; beside it ``riverbed cdc postgres`` captures the same database (own
slot, publication and topic prefix).  Both must give the same events per key (key, op,
before, after, order; tombstones included) for the initial snapshot and the streamed
inserts, updates, deletes; ``source``, ``ts_ms`` and ``transaction`` are not compared
(connector metadata, docs/cdc.md).

Default suite (``test_connect_snapshot_stream_restart``, ~30 s): snapshot, a seeded
workload, the worker stopped (SIGTERM), more changes made while it is down, a new worker
process resuming from the offsets committed in Riverbed's offsets topic: no change lost,
none delivered twice.  ``-m kafka_connect``: exactly-once source support
(``exactly.once.source.support=enabled``: records and offsets in one Kafka transaction,
read with ``isolation.level=read_committed``) with the worker SIGKILLed three times during
a continuous workload.

Skips when PostgreSQL, Java or Maven is missing; the first run downloads Connect and
Debezium from Maven Central.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import json
import random
import shutil
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing.child_process import ChildProcess
from riverbed.testing.debezium_embedded import PostgresSource
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.json_topic import read_json_topic
from riverbed.testing.kafka_connect import (
    ConnectError,
    ConnectWorker,
    debezium_postgres_config,
    ensure_connect,
)
from riverbed.testing.postgres_cluster import (
    SUPERUSER,
    SUPERUSER_PASSWORD,
    PostgresCluster,
    postgres_bin_dir,
)
from riverbed.testing.waiting import wait_until

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "cdc", "postgres"]
CONNECTOR = "pg-debezium"
DDL = [
    """CREATE TABLE items (
        id integer PRIMARY KEY, name text, price numeric(10,2), at timestamptz, day date,
        tags jsonb, blob bytea, ok boolean, ints integer[], at3 timestamptz(3),
        ts0 timestamp(0))""",
    "CREATE TABLE pairs (region text, k integer, v text, PRIMARY KEY (region, k))",
]
TABLES = ["public.items", "public.pairs"]


# --- the workload -----------------------------------------------------------------------


class Workload:
    """Seeded single-statement transactions (inserts, non-key updates, deletes) and some
    rolled-back ones; counts the events each table's topic should get (insert 1, update 1,
    delete 2 with its tombstone)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.expected: dict[str, int] = defaultdict(int)
        self.items: set[int] = set()
        self.pairs: set[tuple[str, int]] = set()
        self.next_id = 0

    def _item(self, key: int) -> tuple[Any, ...]:
        rng = self.rng
        at = dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
            microseconds=rng.randrange(10**14)
        )
        return (
            key,
            rng.choice([None, "", "ann", "bé ☃", 'q"s']),
            rng.choice([None, decimal.Decimal(rng.randrange(-(10**8), 10**8)).scaleb(-2)]),
            rng.choice([None, at]),
            rng.choice([None, dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(9000))]),
            rng.choice([None, json.dumps({"n": rng.randrange(9), "l": [1, "x", None]})]),
            rng.choice([None, bytes(rng.getrandbits(8) for _ in range(rng.randrange(8)))]),
            rng.choice([None, True, False]),
            rng.choice([None, [rng.randrange(-99, 99) for _ in range(rng.randrange(3))]]),
            rng.choice([None, at.replace(microsecond=rng.choice([0, 120000, 123000]))]),
            rng.choice([None, at.replace(tzinfo=None, microsecond=0)]),
        )

    def step(self, cur: Any) -> tuple[str, int]:
        """One statement; returns (table, events it makes once committed)."""
        rng = self.rng
        if rng.random() < 0.6:
            choice = rng.random()
            if not self.items or choice < 0.45:
                self.next_id += 1
                self.items.add(self.next_id)
                cur.execute(
                    f"INSERT INTO items VALUES ({', '.join(['%s'] * 11)})",
                    self._item(self.next_id),
                )
                return "items", 1
            key = rng.choice(sorted(self.items))
            if choice < 0.8:
                row = self._item(key)
                cur.execute(
                    "UPDATE items SET name = %s, price = %s, at = %s, day = %s, tags = %s,"
                    " blob = %s, ok = %s, ints = %s, at3 = %s, ts0 = %s WHERE id = %s",
                    (*row[1:], key),
                )
                return "items", 1
            self.items.discard(key)
            cur.execute("DELETE FROM items WHERE id = %s", (key,))
            return "items", 2
        choice = rng.random()
        if not self.pairs or choice < 0.5:
            self.next_id += 1
            pair = (rng.choice(["eu", "us"]), self.next_id)
            self.pairs.add(pair)
            cur.execute("INSERT INTO pairs VALUES (%s, %s, %s)", (*pair, f"v{self.next_id}"))
            return "pairs", 1
        pair = rng.choice(sorted(self.pairs))
        if choice < 0.8:
            cur.execute(
                "UPDATE pairs SET v = %s WHERE region = %s AND k = %s",
                (f"w{rng.randrange(999)}", *pair),
            )
            return "pairs", 1
        self.pairs.discard(pair)
        cur.execute("DELETE FROM pairs WHERE region = %s AND k = %s", pair)
        return "pairs", 2

    def run(self, conn: Any, transactions: int) -> None:
        for _ in range(transactions):
            before = (set(self.items), set(self.pairs))
            with conn.cursor() as cur:
                table, n = self.step(cur)
            if self.rng.random() < 0.1:
                conn.rollback()
                self.items, self.pairs = before
            else:
                conn.commit()
                self.expected[table] += n


# --- reading and comparing --------------------------------------------------------------


def per_key(records: list[tuple[Any, Any]]) -> dict[str, list[Any]]:
    """Per key (its JSON), the events' op/before/after in order; None for a tombstone."""
    out: dict[str, list[Any]] = defaultdict(list)
    for key, value in records:
        event = None if value is None else {f: value[f] for f in ("op", "before", "after")}
        out[json.dumps(key, sort_keys=True)].append(event)
    return dict(out)


def without_redeliveries(records: list[tuple[Any, Any]]) -> tuple[list[tuple[Any, Any]], int]:
    """``records`` without the events seen before under the same key (same op, LSN and
    images: a re-delivery), nor the tombstones that follow a dropped ``d``; and how many
    records were dropped."""
    seen: set[str] = set()
    kept: list[tuple[Any, Any]] = []
    last_dropped: dict[str, bool] = {}
    for key, value in records:
        k = json.dumps(key, sort_keys=True)
        if value is None:
            if not last_dropped.get(k, False):
                kept.append((key, value))
            continue
        ident = json.dumps(
            [k, value["op"], value["source"].get("lsn"), value["before"], value["after"]],
            sort_keys=True,
        )
        last_dropped[k] = ident in seen
        if not last_dropped[k]:
            seen.add(ident)
            kept.append((key, value))
    return kept, len(records) - len(kept)


def diff_report(table: str, ours: dict[str, list[Any]], theirs: dict[str, list[Any]]) -> list[str]:
    lines = []
    for key in sorted(set(ours) | set(theirs)):
        a, b = ours.get(key, []), theirs.get(key, [])
        if a != b:
            lines.append(f"{table} key {key}:\n  riverbed {a}\n  debezium {b}")
    return lines


# --- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL binaries not installed (scripts/setup: apt-get install postgresql)")
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("java/mvn not installed")
    try:
        ensure_connect()
    except ConnectError as exc:
        pytest.skip(f"Kafka Connect could not be built: {exc}")
    cluster = PostgresCluster.create(tmp_path_factory.mktemp("pg"))
    yield cluster
    cluster.close()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    # a lone worker need not wait Kafka's 3 s for more members before its first rebalance
    config = {"group.initial.rebalance.delay.ms": "0"}
    with EmbeddedBroker(tmp_path / "broker", config) as running:
        yield running


class Scenario:
    """One database with the two tables and some rows, captured by ``riverbed cdc
    postgres`` (prefix ``rb``) and by Debezium under Connect (prefix ``kc``)."""

    def __init__(self, pg: PostgresCluster, broker: EmbeddedBroker, tmp_path: Path) -> None:
        import psycopg2

        self.pg, self.broker, self.tmp_path = pg, broker, tmp_path
        self.dbname = pg.create_database()
        self.conn = psycopg2.connect(pg.dsn(dbname=self.dbname))
        with self.conn.cursor() as cur:
            for ddl in DDL:
                cur.execute(ddl)
        self.conn.commit()
        self.workload = Workload(7)
        self.workload.run(self.conn, 20)  # the rows of the initial snapshot
        with self.conn.cursor() as cur:
            for table in ("items", "pairs"):
                cur.execute(f"SELECT count(*) FROM {table}")
                self.workload.expected[table] = cur.fetchone()[0]  # one r event per row
        self.rb = ChildProcess(
            tmp_path / "riverbed.log",
            [
                *ENTRY,
                *("--dsn", pg.dsn(dbname=self.dbname)),
                *("--bootstrap-server", broker.bootstrap_servers),
                *("--topic-prefix", "rb", "--slot", "rb_slot", "--publication", "rb_pub"),
                *[arg for table in TABLES for arg in ("--table", table)],
            ],
        )

    def connector_config(self) -> dict[str, str]:
        return debezium_postgres_config(
            PostgresSource(
                host="127.0.0.1",
                port=self.pg.port,
                user=SUPERUSER,
                password=SUPERUSER_PASSWORD,
                dbname=self.dbname,
                tables=TABLES,
                topic_prefix="kc",
                slot="kc_slot",
                publication="kc_pub",
            )
        )

    def topics(self, committed: bool) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        ours = {
            t: read_json_topic(self.broker.bootstrap_servers, f"rb.public.{t}") for t in self.tables
        }
        theirs = {
            t: read_json_topic(self.broker.bootstrap_servers, f"kc.public.{t}", committed)
            for t in self.tables
        }
        return ours, theirs

    tables = ("items", "pairs")

    def debezium_high(self) -> int:
        """The high watermarks of Debezium's topics, summed (transaction markers included)."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(
            {"bootstrap.servers": self.broker.bootstrap_servers, "group.id": uuid.uuid4().hex}
        )
        try:
            total = 0
            for t in self.tables:
                with contextlib.suppress(KafkaException):
                    total += consumer.get_watermark_offsets(
                        TopicPartition(f"kc.public.{t}", 0), timeout=10
                    )[1]
            return total
        finally:
            consumer.close()

    def wait_and_compare(
        self, committed: bool = False, timeout_s: float = 180, redelivered: bool = False
    ) -> int:
        """Both sides have every expected event, and the same ones per key.  With
        ``redelivered``, Debezium's events re-delivered after a crash (at least once: the
        same LSN, op and images again, with its tombstone) are dropped before comparing;
        returns how many were dropped."""
        expected = dict(self.workload.expected)
        got: dict[str, Any] = {}
        dropped = {t: 0 for t in self.tables}

        def complete() -> bool:
            got["ours"], got["theirs"] = self.topics(committed)
            if redelivered:
                for t in self.tables:
                    got["theirs"][t], dropped[t] = without_redeliveries(got["theirs"][t])
            return all(
                len(side[t]) >= expected[t]
                for side in (got["ours"], got["theirs"])
                for t in self.tables
            )

        try:
            wait_until(complete, timeout_s, f"both connectors' events {expected}")
        except AssertionError as exc:
            counts = {side: {t: len(v) for t, v in got[side].items()} for side in got}
            raise AssertionError(f"{exc}; got {counts}") from None
        problems = []
        for t in self.tables:
            assert len(got["ours"][t]) == expected[t], (t, len(got["ours"][t]), expected[t])
            assert len(got["theirs"][t]) == expected[t], (t, len(got["theirs"][t]), expected[t])
            problems += diff_report(t, per_key(got["ours"][t]), per_key(got["theirs"][t]))
        assert not problems, "\n".join(problems[:10])
        return sum(dropped.values())

    def close(self) -> None:

        self.rb.stop()
        self.conn.close()
        self.pg.drop_database(self.dbname)


# The envelope fields only Debezium sends (docs/cdc.md, Kafka Connect): the rest of the
# envelope and of ``source`` has the same field names on both sides.
DEBEZIUM_ONLY_FIELDS = {"transaction", "ts_us", "ts_ns"}
DEBEZIUM_ONLY_SOURCE_FIELDS = {"ts_us", "ts_ns", "origin", "origin_lsn"}


def _envelope_fields(records: list[tuple[Any, Any]]) -> tuple[set[str], set[str]]:
    """The field names of the first non-tombstone value and of its ``source``."""
    value = next(v for _k, v in records if v is not None)
    return set(value), set(value["source"])


def _topic_configs(bootstrap: str, topics: list[str]) -> dict[str, str]:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
    out = {}
    for resource, future in admin.describe_configs(resources).items():
        out[resource.name] = future.result(timeout=30)["cleanup.policy"].value
    return out


def test_connect_snapshot_stream_restart(
    pg: PostgresCluster, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """Worker up, connector RUNNING, snapshot + workload equal to ``riverbed cdc``'s; the
    worker stopped, changes made meanwhile, a new worker process resumes from the
    committed offsets: every change exactly once (a graceful stop commits the offsets)."""
    scenario = Scenario(pg, broker, tmp_path)
    try:
        scenario.rb.start()
        with ConnectWorker(broker.bootstrap_servers, tmp_path / "connect") as worker:
            worker.create_connector(CONNECTOR, scenario.connector_config())
            wait_until(lambda: worker.running(CONNECTOR), 120, f"{CONNECTOR} RUNNING")
            scenario.wait_and_compare()  # both snapshots, before anything changes
            ours, theirs = scenario.topics(committed=False)
            (our_top, our_source), (dbz_top, dbz_source) = (
                _envelope_fields(ours["items"]),
                _envelope_fields(theirs["items"]),
            )
            assert (dbz_top - our_top, our_top - dbz_top) == (DEBEZIUM_ONLY_FIELDS, set())
            assert (dbz_source - our_source, our_source - dbz_source) == (
                DEBEZIUM_ONLY_SOURCE_FIELDS,
                set(),
            )
            group = worker.group_id
            internal = [f"{group}-configs", f"{group}-offsets", f"{group}-status"]
            assert _topic_configs(broker.bootstrap_servers, internal) == dict.fromkeys(
                internal, "compact"
            )
            scenario.workload.run(scenario.conn, 40)
            scenario.wait_and_compare()
        # stopped: these changes wait in Debezium's slot until the next worker resumes
        scenario.workload.run(scenario.conn, 30)
        with ConnectWorker(broker.bootstrap_servers, tmp_path / "connect2") as worker:
            # the connector's config comes from Riverbed's config topic: not registered again
            wait_until(lambda: worker.running(CONNECTOR), 120, f"{CONNECTOR} RUNNING again")
            scenario.workload.run(scenario.conn, 10)
            scenario.wait_and_compare()
        scenario.rb.assert_alive()
    finally:
        scenario.close()


def snapshot_offset_committed(bootstrap: str, group: str) -> bool:
    """Connect committed a source offset of the connector (in ``<group>-offsets``, 25
    partitions) past the end of Debezium's initial snapshot.  A worker killed before that
    leaves ``snapshot_completed=false`` behind and the next one snapshots again."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        topic = f"{group}-offsets"
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(25)
        }
        filled = [p for p, end in ends.items() if end > 0]
        if not filled:
            return False
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in filled])
        latest: Any = None
        deadline = time.monotonic() + 30
        while any(
            consumer.position([TopicPartition(topic, p)])[0].offset < ends[p] for p in filled
        ):
            msg = consumer.poll(0.5)
            if (
                msg is not None
                and msg.error() is None
                and msg.key() is not None
                and msg.value() is not None
                and json.loads(msg.key())[0] == CONNECTOR
            ):
                latest = json.loads(msg.value())
            if time.monotonic() > deadline:
                return False
        return latest is not None and latest.get("snapshot_completed", True) is True
    finally:
        consumer.close()


def _kill_during_workload(
    scenario: Scenario,
    worker: ConnectWorker,
    rng: random.Random,
    workdir: Path,
    exactly_once: bool = True,
) -> ConnectWorker:
    """Run 60 transactions on a thread, SIGKILL ``worker`` once Debezium sent 5-40 more
    records, start a new worker; returns it once the connector runs on it."""
    writer = threading.Thread(target=scenario.workload.run, args=(scenario.conn, 60))
    writer.start()
    # the worker streams (this round's changes and any backlog) when it is killed
    target = scenario.debezium_high() + rng.randrange(5, 40)
    wait_until(
        lambda: scenario.debezium_high() >= target, 120, "Debezium to capture part of the workload"
    )
    worker.kill()
    writer.join(120)
    fresh = ConnectWorker(scenario.broker.bootstrap_servers, workdir, exactly_once=exactly_once)
    fresh.start()
    wait_until(lambda: fresh.running(CONNECTOR), 120, f"{CONNECTOR} RUNNING")
    return fresh


@pytest.mark.kafka_connect
@pytest.mark.timeout(600)
def test_connect_exactly_once_with_worker_sigkills(
    pg: PostgresCluster, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """``exactly.once.source.support=enabled``: each batch of records and its offsets in one
    Riverbed transaction.  A workload runs on a thread while the worker is SIGKILLed three
    times (each time a new worker process resumes); read with ``read_committed``, Debezium's
    topics hold every change exactly once, equal to ``riverbed cdc``'s."""
    scenario = Scenario(pg, broker, tmp_path)
    rng = random.Random(3)
    try:
        scenario.rb.start()
        worker = ConnectWorker(broker.bootstrap_servers, tmp_path / "connect-0", exactly_once=True)
        worker.start()
        try:
            worker.create_connector(CONNECTOR, scenario.connector_config())
            wait_until(lambda: worker.running(CONNECTOR), 120, f"{CONNECTOR} RUNNING")
            scenario.wait_and_compare(committed=True)  # both snapshots
            # killed before then, Debezium would snapshot again (its documented behaviour)
            wait_until(
                lambda: snapshot_offset_committed(broker.bootstrap_servers, worker.group_id),
                60,
                "an offset commit past the snapshot",
            )
            for round_ in range(1, 4):
                worker = _kill_during_workload(scenario, worker, rng, tmp_path / f"w{round_}")
            scenario.wait_and_compare(committed=True, timeout_s=200)
        finally:
            worker.stop()
        scenario.rb.assert_alive()
    finally:
        scenario.close()


@pytest.mark.kafka_connect
@pytest.mark.timeout(600)
def test_connect_at_least_once_with_worker_sigkills(
    pg: PostgresCluster, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """Connect's default (at least once): the worker SIGKILLed three times during a
    continuous workload.  Nothing is lost; what Debezium sends twice are re-deliveries of
    changes after the last offsets the killed worker committed (same LSN and images), and
    without them its topics equal ``riverbed cdc``'s."""
    scenario = Scenario(pg, broker, tmp_path)
    rng = random.Random(4)
    try:
        scenario.rb.start()
        worker = ConnectWorker(broker.bootstrap_servers, tmp_path / "connect-0")
        worker.start()
        try:
            worker.create_connector(CONNECTOR, scenario.connector_config())
            wait_until(lambda: worker.running(CONNECTOR), 120, f"{CONNECTOR} RUNNING")
            scenario.wait_and_compare()
            # killed before then, Debezium would snapshot again (its documented behaviour)
            wait_until(
                lambda: snapshot_offset_committed(broker.bootstrap_servers, worker.group_id),
                60,
                "an offset commit past the snapshot",
            )
            for round_ in range(1, 4):
                worker = _kill_during_workload(
                    scenario, worker, rng, tmp_path / f"w{round_}", exactly_once=False
                )
            duplicates = scenario.wait_and_compare(timeout_s=200, redelivered=True)
            print(f"re-delivered after 3 SIGKILLs: {duplicates} records")
        finally:
            worker.stop()
        scenario.rb.assert_alive()
    finally:
        scenario.close()
