"""Helpers for the PostgreSQL CDC tests (imported by basename, so the name is unique):
a private cluster and an embedded broker per module, a fresh database per test, the
connector as a child process (``riverbed cdc postgres``), and topic reads up to the high
watermark.  Every wait is a condition polled against a deadline."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.postgres_cluster import PostgresCluster, postgres_bin_dir

T = TypeVar("T")

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "cdc", "postgres"]


def wait_until(condition: Callable[[], T], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)  # polling interval of a condition check, not synchronisation


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
        self.name = f"db_{uuid.uuid4().hex[:10]}"
        admin = psycopg2.connect(cluster.dsn())
        admin.autocommit = True
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {self.name}")
        admin.close()
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


class ConnectorProcess:
    """``riverbed cdc postgres`` as a child: started, SIGTERMed or SIGKILLed."""

    def __init__(self, log_path: Path, *args: str) -> None:
        self.args = [*ENTRY, *args]
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ConnectorProcess:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def assert_alive(self) -> None:
        assert self.proc is not None and self.proc.poll() is None, self.log()

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


def read_topic(bootstrap: str, topic: str, timeout_s: float = 30) -> list[tuple[Any, Any]]:
    """Every record of partition 0 up to the high watermark: (key, value) JSON-decoded."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False}
    )
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        out: list[tuple[Any, Any]] = []
        if high == 0:
            return out
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout_s
        while True:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                key, value = msg.key(), msg.value()
                out.append(
                    (
                        None if key is None else json.loads(key),
                        None if value is None else json.loads(value),
                    )
                )
                if msg.offset() + 1 >= high:
                    return out
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out reading {topic} to offset {high}")
    finally:
        consumer.close()


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


def wait_records(
    bootstrap: str, topic: str, count: int, timeout_s: float = 60
) -> list[tuple[Any, Any]]:
    """The topic's records once it holds at least ``count`` (topic created or not)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def enough() -> list[tuple[Any, Any]] | None:
        if topic not in admin.list_topics(timeout=10).topics:
            return None
        records = read_topic(bootstrap, topic)
        return records if len(records) >= count else None

    return wait_until(enough, timeout_s, f"{count} records in {topic}")


def wait_streaming(bootstrap: str, prefix: str, timeout_s: float = 60) -> None:
    """Until the connector's stored position says its snapshot completed (it streams from
    the slot next: changes committed from now on arrive as c/u/d events)."""
    topic = f"{prefix}.cdc-offsets"

    def completed() -> bool:
        records = wait_records(bootstrap, topic, 1, timeout_s)
        return bool(records[-1][1] and records[-1][1].get("snapshot_completed"))

    wait_until(completed, timeout_s, f"a completed snapshot in {topic}")
