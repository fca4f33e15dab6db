"""Helpers for the PostgreSQL CDC tests (imported by basename, so the name is unique):
a private cluster and an embedded broker per module, a fresh database per test, the
connector as a child process (``riverbed cdc postgres``), and topic reads up to the high
watermark.  Every wait is a condition polled against a deadline."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing.child_process import ChildProcess
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.json_topic import read_json_topic, wait_json_topic
from riverbed.testing.postgres_cluster import PostgresCluster, postgres_bin_dir
from riverbed.testing.waiting import wait_until

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "cdc", "postgres"]


@pytest.fixture(scope="module")
def pg_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    if postgres_bin_dir() is None:
        pytest.skip("PostgreSQL binaries not installed (scripts/setup: apt-get install postgresql)")
    cluster = PostgresCluster.create(tmp_path_factory.mktemp("pg"))
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("broker")) as running:
        yield running


class Database:
    """A fresh database in the module's cluster, with a psycopg2 autocommit session."""

    def __init__(self, cluster: PostgresCluster) -> None:
        import psycopg2

        self.cluster = cluster
        self.name = cluster.create_database()
        self.dsn = cluster.dsn(dbname=self.name)
        self.conn = psycopg2.connect(self.dsn)
        self.conn.autocommit = True

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall()) if cur.description else []

    def reconnect(self) -> None:
        import psycopg2

        self.conn = psycopg2.connect(self.dsn)
        self.conn.autocommit = True


@pytest.fixture
def db(pg_cluster: PostgresCluster) -> Iterator[Database]:
    database = Database(pg_cluster)
    yield database
    database.conn.close()


class ConnectorProcess(ChildProcess):
    """``riverbed cdc postgres ARGS`` as a child: started, SIGTERMed or SIGKILLed."""

    def __init__(self, log_path: Path, *args: str) -> None:
        super().__init__(log_path, [*ENTRY, *args])


def read_topic(bootstrap: str, topic: str, timeout_s: float = 30) -> list[tuple[Any, Any]]:
    """Every record of partition 0 up to the high watermark: (key, value) JSON-decoded
    (:func:`riverbed.testing.json_topic.read_json_topic`)."""
    return read_json_topic(bootstrap, topic, timeout_s=timeout_s)


def latest_per_key(records: list[tuple[Any, Any]]) -> dict[str, Any]:
    """What compaction keeps: the latest ``after`` per key (tombstones forget the key)."""
    state: dict[str, Any] = {}
    for key, value in records:
        name = json.dumps(key, sort_keys=True)
        if value is None:
            state.pop(name, None)
        elif value["op"] != "t" and value["after"] is not None:
            state[name] = value["after"]
    return state


wait_records = wait_json_topic  # the topic's records once it holds at least count


def wait_streaming(bootstrap: str, prefix: str, timeout_s: float = 60) -> None:
    """Until the connector's stored position says its snapshot completed (it streams from
    the slot next: changes committed from now on arrive as c/u/d events)."""
    topic = f"{prefix}.cdc-offsets"

    def completed() -> bool:
        records = wait_records(bootstrap, topic, 1, timeout_s)
        return bool(records[-1][1] and records[-1][1].get("snapshot_completed"))

    wait_until(completed, timeout_s, f"a completed snapshot in {topic}")
