"""A schema change made while the connector handles an earlier one is not missed.

The connector compares ``PRAGMA schema_version`` with the version it has handled.  It used
to record the version read *after* re-installing its triggers, so a table created by the
application between that re-install and that read counted as handled: it never got
triggers and its changes were never captured (test_tables_created_or_recreated_while_running
failed now and then on a loaded box: "timed out waiting for 1 records in ...main.a").  Here
the table is created exactly there, deterministically.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from cdc_helpers import read_at_least, wait_until

from riverbed.cdc.sqlite import triggers
from riverbed.cdc.sqlite.connector import SqliteConnector
from riverbed.testing.embedded import EmbeddedBroker


def test_a_table_created_during_a_reinstall_is_captured(
    broker: EmbeddedBroker, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE a (id INTEGER PRIMARY KEY)")
    prefix = f"race{uuid.uuid4().hex[:8]}"
    connector = SqliteConnector(
        db, {"bootstrap.servers": broker.bootstrap_servers}, topic_prefix=prefix
    )
    connector.start()
    try:
        while connector.poll_once():  # the snapshot of a sent; its own DDL seen
            pass
        conn.execute("CREATE TABLE b (id INTEGER PRIMARY KEY)")  # the change it handles next

        original: Callable[[sqlite3.Connection], object] = triggers.snapshot_bounds

        def create_c_meanwhile(c: sqlite3.Connection) -> object:
            # called after the re-install for b committed, before the version is recorded
            monkeypatch.setattr(triggers, "snapshot_bounds", original)
            other = sqlite3.connect(db, isolation_level=None)
            other.execute("CREATE TABLE c (id INTEGER PRIMARY KEY, v TEXT)")
            other.close()
            return original(c)

        monkeypatch.setattr(triggers, "snapshot_bounds", create_c_meanwhile)
        connector.poll_once()
        assert triggers.snapshot_bounds is original, "the re-install for b did not run"

        def c_captured() -> bool:
            connector.poll_once()
            return triggers.has_triggers(conn, "c")

        wait_until(c_captured, 30, "triggers on table c")
        conn.execute("INSERT INTO c VALUES (1, 'seen')")
        wait_until(connector.poll_once, 30, "the insert into c sent")
        records = read_at_least(broker.bootstrap_servers, f"{prefix}.main.c", 1)
        assert [value["after"] for _key, value in records] == [{"id": 1, "v": "seen"}]
    finally:
        connector.close(timeout_s=30)
        conn.close()
