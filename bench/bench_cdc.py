"""``riverbed cdc postgres`` beside Debezium's PostgreSQL connector (embedded engine
3.6.1.Final, writing to the same broker through its own Kafka producer, acks=all): changes
per second from the first commit to the last event on the topic, and commit-to-topic latency.

    .venv/bin/python bench/bench_cdc.py [--changes 20000] [--batch 100] [--rate TXN_PER_S]
        [--only riverbed|debezium]

One private PostgreSQL cluster and one embedded Riverbed broker.  Each connector in turn
(never both at once, so they do not share the CPUs) gets a fresh database with one table
``bench (id integer PRIMARY KEY, payload text, committed_at double precision)``, its own
slot, publication and topic (created beforehand, one partition); once its slot exists, a
writer commits ``--changes`` inserts, ``--batch`` per transaction (``--rate`` transactions
per second, or as fast as it can: then latency is mostly queueing), each row carrying
``time.time()`` taken as its transaction starts (an INSERT ... SELECT generate_series, then
COMMIT).  A consumer (assigned, no group) reads the topic from a thread meanwhile and
records, per event, arrival time - ``committed_at``.  Prints, per connector, changes/s
(first commit to last event) and latency p50/p99/max (ms).  Both include the consumer's own
fetch delay (fetch.wait.max.ms=10).  Debezium's figures include its JVM's warm-up inside the
run (it is started, and its slot created, before the clock starts).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from riverbed.testing.debezium_embedded import DebeziumCapture, engine_properties, ensure_capture
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.postgres_cluster import SUPERUSER, SUPERUSER_PASSWORD, PostgresCluster


def _slot_exists(pg: PostgresCluster, slot: str) -> bool:
    import psycopg2

    conn = psycopg2.connect(pg.dsn())
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


def _wait(cond: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(0.1)


def _run_one(
    name: str,
    pg: PostgresCluster,
    broker: EmbeddedBroker,
    tmp: Path,
    changes: int,
    batch: int,
    rate: float,
) -> dict[str, float]:
    import psycopg2
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    dbname = f"bench_{name}_{uuid.uuid4().hex[:6]}"
    admin_pg = psycopg2.connect(pg.dsn())
    admin_pg.autocommit = True
    with admin_pg.cursor() as cur:
        cur.execute(f"CREATE DATABASE {dbname}")
    admin_pg.close()
    conn = psycopg2.connect(pg.dsn(dbname=dbname))
    with conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE bench (id integer PRIMARY KEY, payload text,"
            " committed_at double precision)"
        )
    conn.commit()
    prefix = f"{name}_{dbname}"
    topic = f"{prefix}.public.bench"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    slot = f"slot_{dbname}"
    workdir = tmp / name
    workdir.mkdir()
    proc: subprocess.Popen[bytes] | None = None
    dbz: DebeziumCapture | None = None
    try:
        if name == "riverbed":
            log = open(workdir / "connector.log", "wb")  # noqa: SIM115
            proc = subprocess.Popen(
                [sys.executable, "-c", "from riverbed.cli.main import main; main()", "cdc",
                 "postgres", "--dsn", pg.dsn(dbname=dbname), "--bootstrap-server",
                 broker.bootstrap_servers, "--topic-prefix", prefix, "--slot", slot,
                 "--publication", f"pub_{dbname}", "--table", "public.bench"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        else:
            props = engine_properties(
                host="127.0.0.1",
                port=pg.port,
                user=SUPERUSER,
                password=SUPERUSER_PASSWORD,
                dbname=dbname,
                tables=["public.bench"],
                topic_prefix=prefix,
                slot=slot,
                publication=f"pub_{dbname}",
            )
            dbz = DebeziumCapture(ensure_capture(), props, workdir, broker.bootstrap_servers)
            dbz.start(180)
        _wait(lambda: _slot_exists(pg, slot), 180, f"{name}'s slot")
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": uuid.uuid4().hex,
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        latencies: list[float] = []
        arrivals: list[float] = []
        failure: list[str] = []

        def consume() -> None:
            deadline = time.monotonic() + 600
            while len(latencies) < changes:
                msg = consumer.poll(0.1)
                if time.monotonic() > deadline:
                    failure.append(f"{name}: only {len(latencies)} of {changes} events")
                    return
                if msg is None or msg.error() is not None:
                    continue
                raw = msg.value()
                if raw is None:
                    continue
                now = time.time()
                arrivals.append(now)
                latencies.append(now - json.loads(raw)["after"]["committed_at"])

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        started = time.time()
        with conn.cursor() as cur:
            for txn, first in enumerate(range(0, changes, batch)):
                if rate > 0:  # pacing of the offered load, not synchronisation
                    time.sleep(max(0.0, started + txn / rate - time.time()))
                last_id = min(first + batch, changes) - 1
                cur.execute(
                    "INSERT INTO bench SELECT g, 'payload-' || g || repeat('x', 100), %s"
                    " FROM generate_series(%s, %s) g",
                    (time.time(), first, last_id),
                )
                conn.commit()
        reader.join()
        consumer.close()
        if failure:
            sys.exit(failure[0])
        last = arrivals[-1]
        latencies.sort()
        return {
            "changes_per_s": changes / (last - started),
            "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
            "max_ms": latencies[-1] * 1000,
        }
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)
        if dbz is not None:
            dbz.close()
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100, help="inserts per transaction")
    parser.add_argument(
        "--rate", type=float, default=0, help="transactions per second (0: as fast as possible)"
    )
    parser.add_argument("--only", choices=["riverbed", "debezium"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with PostgresCluster.create(tmp) as pg, EmbeddedBroker(tmp / "broker") as broker:
            for name in ("riverbed", "debezium"):
                if args.only and args.only != name:
                    continue
                result = _run_one(name, pg, broker, tmp, args.changes, args.batch, args.rate)
                rate = args.rate or "max"
                print(
                    f"{name:9s} {args.changes} changes, {args.batch}/txn, {rate} txn/s: "
                    f"{result['changes_per_s']:,.0f} changes/s, latency p50 "
                    f"{result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, "
                    f"max {result['max_ms']:.1f} ms",
                    flush=True,
                )


if __name__ == "__main__":
    main()
