"""``riverbed cdc sqlite`` under SIGKILL: a random workload from a separate writer process
(inserts, updates, deletes, key changes, rollbacks, some while the snapshot is taken), the
connector killed with SIGKILL again and again, the writer killed mid-transaction once.

At the end, for every table: the latest value per key in the topic equals the table (what
compaction keeps), and per key the events, duplicates (same ``source.seq``) aside, form an
unbroken chain in commit order: each ``u``/``d`` has as ``before`` the previous ``after``,
each ``r``/``c`` starts from an absent row — so nothing committed was lost or reordered.

The default run takes ~15 s; ``RIVERBED_CDC_SOAK=1`` runs a bigger workload with more kills.

The last connector is stopped with SIGTERM and must exit 0.  Its close waits up to 30 s
for acknowledgements (+5 s for the offset record), so the test allows 90 s; a connector
still running then is aborted with SIGABRT, which makes it print every thread's Python
stack (``PYTHONFAULTHANDLER``), and the failure shows its log.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cdc_helpers import (
    WRITER,
    ConnectorProcess,
    env_int,
    latest_per_key,
    pending_changes,
    read_topic,
    wait_until,
)

from riverbed.testing.embedded import EmbeddedBroker

SOAK = os.environ.get("RIVERBED_CDC_SOAK") == "1"
TABLES = {"items": ("id",), "pairs": ("a", "b")}


def _render(value: Any) -> Any:
    return base64.b64encode(value).decode() if isinstance(value, bytes) else value


def table_state(db: Path, table: str) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(db, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        conn.close()
    state = {}
    for row in rows:
        image = {name: _render(row[name]) for name in row.keys()}  # noqa: SIM118
        state[json.dumps({k: image[k] for k in TABLES[table]}, sort_keys=True)] = image
    return state


def check_chains(records: list[tuple[Any, Any]]) -> dict[str, dict[str, Any]]:
    """Per key: drop duplicates, check the before/after chain; return the final rows."""
    current: dict[str, dict[str, Any] | None] = {}
    history: dict[str, list[str]] = {}
    skip_tombstone: set[str] = set()
    seen: dict[str, set[tuple[int, str]]] = {}
    last_seq: dict[str, int] = {}
    for key, value in records:
        k = json.dumps(key, sort_keys=True)
        log = history.setdefault(k, [])
        if value is None:
            log.append("tombstone")
            if k in skip_tombstone:
                skip_tombstone.discard(k)  # it follows a duplicate delete
                continue
            assert current.get(k) is None, f"tombstone for a live key {k}: {log}"
            continue
        seq, op = value["source"]["seq"], value["op"]
        log.append(f"{op}@{seq}")
        if (seq, op) in seen.setdefault(k, set()):
            if op == "d":
                skip_tombstone.add(k)
            continue  # a duplicate of a change not yet acknowledged before a kill
        seen[k].add((seq, op))
        assert seq >= last_seq.get(k, 0), f"key {k}: seq {seq} after {last_seq[k]}: {log}"
        last_seq[k] = seq
        if op in ("r", "c"):
            assert current.get(k) is None, f"key {k}: {op} over a live row: {log}"
        else:
            assert value["before"] == current.get(k), f"key {k}: broken chain: {log}"
        current[k] = value["after"]
    return {k: v for k, v in current.items() if v is not None}


def stop_connector(connector: ConnectorProcess, timeout_s: float = 90) -> None:
    """SIGTERM; it must exit 0 within ``timeout_s``, else it is aborted and the failure
    shows its stacks and log (the connector logs the stop and how long its close took)."""
    try:
        code = connector.terminate(timeout_s)
    except subprocess.TimeoutExpired:
        connector.proc.send_signal(signal.SIGABRT)  # faulthandler: every thread's stack
        connector.proc.wait(30)
        pytest.fail(
            f"the connector did not exit {timeout_s:.0f} s after SIGTERM; its log:\n"
            f"{connector.stderr()[-20_000:]}"
        )
    assert code == 0, connector.stderr()


def start_writer(
    db: Path, seed: int, transactions: int, sleep_ms: int = 0, gap_ms: int | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            str(WRITER),
            str(db),
            str(seed),
            str(transactions),
            str(sleep_ms),
            str(sleep_ms if gap_ms is None else gap_ms),
        ]
    )


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_sigkill_loses_nothing_committed(
    broker: EmbeddedBroker, db: Path, journal_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONFAULTHANDLER", "1")  # a SIGABRTed connector prints its stacks
    rng = random.Random(env_int("RIVERBED_CDC_SEED", 11))
    kills = 12 if SOAK else 4
    transactions = 3000 if SOAK else 300
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(f"PRAGMA journal_mode = {journal_mode}")  # rollback journal, or WAL
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER, t TEXT, r REAL, b BLOB)")
    conn.execute("CREATE TABLE pairs (a TEXT, b INTEGER, w REAL, PRIMARY KEY (a, b))")
    conn.executemany(
        "INSERT INTO items VALUES (?, 0, 'seed', 0.5, x'00')", [(i,) for i in range(0, 60, 2)]
    )
    conn.close()
    bootstrap, prefix = broker.bootstrap_servers, f"crash{journal_mode}{rng.randrange(10**6)}"

    # the writer runs from before the snapshot to after the last kill
    writer = start_writer(db, rng.randrange(10**6), transactions, sleep_ms=20)
    connector = ConnectorProcess(db, bootstrap, "--topic-prefix", prefix)
    try:
        for round_ in range(kills):
            time.sleep(rng.uniform(0.3, 1.2))  # the kill lands at a random moment
            connector.kill()
            if round_ == kills // 2:
                victim = start_writer(db, rng.randrange(10**6), 10**6, sleep_ms=100, gap_ms=5)
                time.sleep(rng.uniform(0.3, 0.8))
                victim.kill()  # SIGKILL, most likely inside a transaction
                victim.wait(30)
            connector = ConnectorProcess(db, bootstrap, "--topic-prefix", prefix)
        assert writer.wait(120) == 0
        wait_until(lambda: pending_changes(db) == 0, 60, "the connector to catch up")
        stop_connector(connector)
    finally:
        for proc in (writer, connector.proc):
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)

    for table in TABLES:
        records = read_topic(bootstrap, f"{prefix}.main.{table}")
        expected = table_state(db, table)
        assert any(v is not None and v["op"] != "r" for _k, v in records), "no streaming"
        assert check_chains(records) == expected, table
        assert latest_per_key(records) == expected, table  # what compaction keeps
