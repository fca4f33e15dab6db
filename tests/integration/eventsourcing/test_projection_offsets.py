"""The SQLite projection is idempotent by offset: a projection that fails in the middle of a
batch (its SQLite transaction rolled back, as a crash would leave it) and catches up again
applies every event exactly once; a rebuild from an empty database gives the same rows
(~15 s)."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.eventsourcing import AppTopics, CommandClient, CommandWriter, Event, create_topics
from riverbed.eventsourcing import replay as replay_events
from riverbed.eventsourcing.bank import BankAccount, apply_balance, balances_projection
from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("es-projection-broker")) as embedded:
        yield embedded


def test_projection_failing_mid_batch_applies_each_event_once(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    config = {"bootstrap.servers": broker.bootstrap_servers}
    topics = AppTopics(f"proj{uuid.uuid4().hex[:6]}")
    create_topics(config, topics, partitions=2)
    stop, ready = threading.Event(), threading.Event()
    writer = CommandWriter(config, topics, BankAccount(), writer_id="p1")
    thread = threading.Thread(target=writer.run, args=(stop,), kwargs={"on_ready": ready.set})
    thread.start()
    try:
        assert ready.wait(120)
        with CommandClient(config, topics) as client:
            futures = [
                client.send(f"acct-{n % 5}", "Deposit", {"amount": n + 1}) for n in range(60)
            ]
            assert all(f.result(timeout=120).ok for f in futures)
    finally:
        stop.set()
        thread.join(60)
    expected = replay_events(config, topics, BankAccount())

    projection = balances_projection(tmp_path / "balances.db", config, topics.app)
    applied = 0

    def failing_apply(conn: sqlite3.Connection, event: Event) -> None:
        nonlocal applied
        applied += 1
        if applied == 25:
            raise RuntimeError("crash in the middle of a batch")
        apply_balance(conn, event)

    projection.apply = failing_apply
    with pytest.raises(RuntimeError):
        projection.catch_up(batch=10)  # batches 1-2 committed, the third rolled back
    assert sum(projection.offsets().values()) == 20
    projection.apply = apply_balance
    assert projection.catch_up(batch=10) == 40  # the rest, none twice
    assert projection.catch_up() == 0
    rows = projection.conn.execute("SELECT account, balance, version FROM balances").fetchall()
    projection.close()
    assert {a: (v, {"balance": b}) for a, b, v in rows} == expected

    rebuilt = balances_projection(tmp_path / "rebuilt.db", config, topics.app)
    assert rebuilt.catch_up() == 60
    assert sorted(rebuilt.conn.execute("SELECT * FROM balances").fetchall()) == sorted(rows)
    rebuilt.close()
