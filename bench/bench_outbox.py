"""The outbox through ``riverbed cdc sqlite --outbox-table outbox``: events per second from
the application's commits to the routed topic, and commit-to-topic latency.

    .venv/bin/python bench/bench_outbox.py [--orders 5000] [--batch 50]

Starts an embedded Riverbed broker and the connector as a child process, waits until it
captures, then an order service commits ``--orders`` transactions (order row + outbox row,
the outbox row deleted in the same transaction), ``--batch`` per transaction group; a
consumer reads ``outbox.event.order`` and records, per event, now - the commit time carried
in its payload.  Prints events/s (first commit to last event) and latency p50/p99.
"""

from __future__ import annotations

import argparse
import json
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from riverbed.testing.embedded import EmbeddedBroker

SCHEMA = """
CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL);
CREATE TABLE outbox (id TEXT PRIMARY KEY, aggregatetype TEXT NOT NULL,
    aggregateid TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL);
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=50, help="orders per transaction group")
    args = parser.parse_args()
    from confluent_kafka import Consumer

    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(Path(tmp) / "broker") as broker:
        db = Path(tmp) / "orders.db"
        sqlite3.connect(db).executescript(SCHEMA)
        log = open(Path(tmp) / "connector.log", "w+b")  # noqa: SIM115
        connector = subprocess.Popen(
            [sys.executable, "-c", "from riverbed.cli.main import main; main()", "cdc",
             "sqlite", "--db", str(db), "--bootstrap-server", broker.bootstrap_servers,
             "--outbox-table", "outbox"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while b"capturing" not in Path(log.name).read_bytes():
            if time.monotonic() > deadline or connector.poll() is not None:
                sys.exit(f"connector did not start: {Path(log.name).read_text()}")
            time.sleep(0.1)
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": uuid.uuid4().hex,
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 500,
            }
        )
        consumer.subscribe(["outbox.event.order"])
        conn = sqlite3.connect(db, isolation_level=None, timeout=60)
        started = time.time()
        for n in range(args.orders):
            if n % args.batch == 0:
                conn.execute("BEGIN IMMEDIATE")
            event_id = str(uuid.uuid4())
            payload = json.dumps({"order": n, "committed": 0.0})
            conn.execute("INSERT INTO orders VALUES (?, ?)", (f"o-{n}", n))
            conn.execute(
                "INSERT INTO outbox VALUES (?, 'order', ?, 'OrderCreated', ?)",
                (event_id, f"o-{n}", payload.replace("0.0", repr(time.time()))),
            )
            conn.execute("DELETE FROM outbox WHERE id = ?", (event_id,))
            if n % args.batch == args.batch - 1 or n == args.orders - 1:
                conn.execute("COMMIT")
        latencies: list[float] = []
        seen: set[str] = set()
        deadline = time.monotonic() + 600
        while len(seen) < args.orders and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            now = time.time()
            seen.add(dict(msg.headers() or [])["id"].decode())
            latencies.append(now - json.loads(msg.value())["committed"])
        elapsed = time.time() - started
        consumer.close()
        connector.send_signal(signal.SIGTERM)
        connector.wait(60)
        latencies.sort()
        print(
            f"{len(seen)} outbox events in {elapsed:.2f} s = {len(seen) / elapsed:,.0f} events/s; "
            f"commit-to-consumer latency p50 {statistics.median(latencies) * 1000:.0f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.0f} ms "
            f"(writer: {args.batch} orders per transaction)"
        )


if __name__ == "__main__":
    main()
