"""The real ``riverbed cdc sqlite`` connector as the changelog: inserts, updates (one of
them changing the primary key: a ``d``, a tombstone and a ``c``) and deletes on a SQLite
table; ``riverbed views run --stop-at-end`` brings the three views to the table's
content, and a rebuild from offset 0 into fresh stores equals it."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from riverbed.testing.broker_process import BrokerProcess, wait_until
from riverbed.views.analytics import AnalyticsView
from riverbed.views.cache import CacheView
from riverbed.views.search import SearchView

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]
TOPIC = "shop.main.customers"


def _table(db: Path) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT id, name, city FROM customers ORDER BY id").fetchall()
    finally:
        conn.close()
    return {f'{{"id":{i}}}': {"id": i, "name": n, "city": c} for i, n, c in rows}


def _views(root: Path, redis_url: str, prefix: str) -> list[Any]:
    return [
        SearchView(root / "search.db"),
        CacheView(redis_url, prefix),
        AnalyticsView(root / "analytics.duckdb"),
    ]


def _catch_up(bootstrap: str, root: Path, redis_url: str, prefix: str) -> list[Any]:
    """One ``views run --stop-at-end``; the three snapshots after it."""
    root.mkdir(exist_ok=True)
    done = subprocess.run(
        [
            *ENTRY,
            "views",
            "run",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            TOPIC,
            "--view",
            f"search:{root / 'search.db'}",
            "--view",
            f"{redis_url}#{prefix}",
            "--view",
            f"duckdb:{root / 'analytics.duckdb'}",
            "--stop-at-end",
        ],
        capture_output=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr.decode()
    views = _views(root, redis_url, prefix)
    try:
        return [v.snapshot() for v in views]
    finally:
        for v in views:
            v.close()


def test_views_follow_the_sqlite_connector(
    broker: BrokerProcess, redis_url: str, tmp_path: Path
) -> None:
    db = tmp_path / "shop.db"
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
    conn.executemany(
        "INSERT INTO customers VALUES (?, ?, ?)",
        [(i, f"customer {i}", ["Oslo", "Lyon", "Porto"][i % 3]) for i in range(1, 21)],
    )
    bootstrap = broker.bootstrap_servers
    with open(tmp_path / "connector.log", "wb") as log:
        connector = subprocess.Popen(
            [
                *ENTRY,
                "cdc",
                "sqlite",
                "--db",
                str(db),
                "--bootstrap-server",
                bootstrap,
                "--topic-prefix",
                "shop",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        conn.execute("UPDATE customers SET city = 'Bergen' WHERE id % 4 = 0")
        conn.execute("DELETE FROM customers WHERE id IN (3, 7, 11)")
        conn.execute("UPDATE customers SET id = 100 WHERE id = 5")  # key change
        conn.execute("INSERT INTO customers VALUES (21, 'late glacier', 'Tromso')")
        conn.execute("DELETE FROM customers WHERE id = 21")
        conn.execute("INSERT INTO customers VALUES (22, 'estuary', 'Nantes')")
        expected = _table(db)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wait_until(
            lambda: TOPIC in admin.list_topics(timeout=30).topics,
            180,
            f"the connector to create {TOPIC}",
        )
        live = tmp_path / "live"
        deadline = time.monotonic() + 180
        while (snapshots := _catch_up(bootstrap, live, redis_url, "cdc-live")) != [expected] * 3:
            assert connector.poll() is None, (tmp_path / "connector.log").read_text()
            assert time.monotonic() < deadline, f"views never reached the table: {snapshots}"
    finally:
        connector.send_signal(signal.SIGTERM)
        connector.wait(timeout=60)
        conn.close()
    assert set(expected) >= {'{"id":100}', '{"id":22}'}
    assert not set(expected) & {'{"id":5}', '{"id":3}', '{"id":21}'}
    search = SearchView(live / "search.db")
    try:
        assert search.search("estuary") == ['{"id":22}']
        assert search.search("glacier") == []
    finally:
        search.close()
    rebuilt = _catch_up(bootstrap, tmp_path / "rebuild", redis_url, "cdc-rebuild")
    assert rebuilt == [expected] * 3
