"""Event sourcing on Kafka transactions, the bank accounts example, against a real broker.

Two writer processes (a snapshot every 4 versions) share the command partitions through
the consumer group; four client threads send deposits, withdrawals, transfers, overdrafts
and commands with a stale ``expected_version``; one writer is SIGKILLed mid-run and
replaced by a process with the same writer id (which fences it).  At the end: every
accepted command's events exist exactly once, versions are 1, 2, 3, ... per account, the
replay from offset 0 equals what a writer loads (snapshots + the events after them) and
the SQLite projection, money is conserved, stale and overdraft commands were rejected
(~30 s on Riverbed, 10 s of it the killed writer's session timeout: the rebalance its
replacement starts, and with it every command, waits that out).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.eventsourcing import (
    AppTopics,
    CommandClient,
    Event,
    all_snapshots,
    create_topics,
    live_state,
    read_to_end,
    replay,
)
from riverbed.eventsourcing.bank import BankAccount, balances_projection
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.waiting import wait_until


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """A 0.5 s initial rebalance delay instead of Riverbed's (and Kafka's) default 3 s,
    which each member joining meanwhile extends by as much: the two writers, started
    together, still form the group in one rebalance, ~1 s instead of ~6 s before the first
    command is decided.  (With no delay, as on the Kafka reference, the first writer takes
    every partition and the second one's join makes a second rebalance, ~2 s slower.)"""
    config = {"group.initial.rebalance.delay.ms": "500"}
    with EmbeddedBroker(tmp_path_factory.mktemp("es-broker"), config) as embedded:
        yield embedded


class Writer:
    """``python -m riverbed.eventsourcing.bank writer`` as a child process."""

    def __init__(self, bootstrap: str, app: str, writer_id: str, log: Path) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "riverbed.eventsourcing.bank", "writer",
                 "--bootstrap-server", bootstrap, "--app", app, "--writer-id", writer_id,
                 "--snapshot-every", "4"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def drained(config: dict[str, Any], topics: AppTopics) -> bool:
    """Every command decided: each partition's committed offset is past its last command
    (read_committed; a transaction's commit marker may follow it)."""
    from confluent_kafka import Consumer, TopicPartition

    last: dict[int, int] = {}
    for msg in read_to_end(config, topics.commands):
        last[msg.partition()] = msg.offset()
    consumer = Consumer(
        {**config, "group.id": f"{topics.app}.writers", "isolation.level": "read_committed"}
    )
    try:
        parts = [TopicPartition(topics.commands, p) for p in last]
        committed = {tp.partition: tp.offset for tp in consumer.committed(parts, timeout=20)}
    finally:
        consumer.close()
    return all(committed.get(p, -1) > offset for p, offset in last.items())


def test_bank_accounts_writer_killed_and_replaced(broker: EmbeddedBroker, tmp_path: Path) -> None:
    bank_scenario(broker.bootstrap_servers, tmp_path)


@pytest.mark.kafka
@pytest.mark.timeout(900)
def test_bank_accounts_on_apache_kafka(tmp_path: Path) -> None:
    """The same against Apache Kafka (``-m kafka``): the package needs no Riverbed."""
    from riverbed.testing.kafka_reference import KafkaReference

    with KafkaReference() as kafka:
        bank_scenario(kafka.bootstrap_servers, tmp_path)


def bank_scenario(bootstrap: str, tmp_path: Path) -> None:
    config = {"bootstrap.servers": bootstrap}
    topics = AppTopics(f"bank{uuid.uuid4().hex[:6]}")
    create_topics(config, topics, partitions=3)
    accounts = [f"acct-{n}" for n in range(6)]
    writers = {
        wid: Writer(bootstrap, topics.app, wid, tmp_path / f"{wid}.log") for wid in ("w1", "w2")
    }
    client = CommandClient(config, topics)
    lock = threading.Lock()
    deposited = withdrawn = 0
    stale_rejected = overdraft_rejected = transfers = 0
    failures: list[BaseException] = []
    progress = Counter[str]()

    def worker(seed: int) -> None:
        nonlocal deposited, withdrawn, stale_rejected, overdraft_rejected, transfers
        rng = random.Random(seed)
        try:
            for _ in range(25):
                account = rng.choice(accounts)
                choice = rng.random()
                if choice < 0.4:
                    amount = rng.randint(1, 100)
                    reply = client.submit(account, "Deposit", {"amount": amount})
                    assert reply.ok, reply
                    with lock:
                        deposited += amount
                elif choice < 0.6:
                    amount = rng.randint(1, 150)
                    reply = client.submit(account, "Withdraw", {"amount": amount})
                    with lock:
                        if reply.ok:
                            withdrawn += amount
                        else:
                            assert reply.error.startswith("insufficient funds"), reply
                            overdraft_rejected += 1
                elif choice < 0.85:
                    to = rng.choice([a for a in accounts if a != account])
                    amount = rng.randint(1, 80)
                    reply = client.submit(account, "Transfer", {"to": to, "amount": amount})
                    with lock:
                        if reply.ok:
                            transfers += 1
                        else:
                            assert reply.error.startswith("insufficient funds"), reply
                            overdraft_rejected += 1
                else:
                    # a stale expected_version: read the version, move it, then use the old one
                    first = client.submit(account, "Deposit", {"amount": 1})
                    assert first.ok
                    moved = client.submit(account, "Deposit", {"amount": 1}, expected_version=None)
                    assert moved.ok and moved.version > first.version
                    stale = client.submit(
                        account, "Deposit", {"amount": 5}, expected_version=first.version - 1
                    )
                    assert not stale.ok and stale.error.startswith("stale version"), stale
                    with lock:
                        deposited += 2
                        stale_rejected += 1
                with lock:
                    progress["ops"] += 1
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    try:
        wait_until(lambda: all("writer ready" in w.text() for w in writers.values()), 120,
                   "both writers")  # fmt: skip
        # an account funded with an exact expected_version, and an overdraft refused
        first = client.submit("acct-0", "Deposit", {"amount": 500}, expected_version=0)
        assert first.ok and first.version == 1, first
        deposited += 500
        over = client.submit("acct-0", "Withdraw", {"amount": 10_000}, expected_version=1)
        assert not over.ok and "insufficient funds: balance 500" in (over.error or ""), over
        for t in threads:
            t.start()
        wait_until(lambda: progress["ops"] >= 20 or failures, 180, "some progress before the kill")
        writers["w1"].kill()
        writers["w1"] = Writer(bootstrap, topics.app, "w1", tmp_path / "w1b.log")
        for t in threads:
            t.join(600)
        assert not failures, failures
        wait_until(lambda: drained(config, topics), 180, "every command decided")
        # the rebalances (a member killed, one joining) did not end the other writer
        assert writers["w2"].proc.poll() is None, writers["w2"].text()
    finally:
        client.close()
        for w in writers.values():
            w.close()

    replayed = replay(config, topics, BankAccount())  # raises on a version gap or duplicate
    # what a writer loads (snapshots every 4 versions + the events after them) == replay
    assert live_state(config, topics, BankAccount()) == replayed
    snapshots = all_snapshots(config, topics)
    assert set(snapshots) == set(replayed)
    assert all(s.version <= replayed[a][0] for a, s in snapshots.items())
    # some account has events after its last snapshot (the loading path was exercised)
    assert any(s.version < replayed[a][0] for a, s in snapshots.items())
    projection = balances_projection(tmp_path / "balances.db", config, topics.app)
    projection.catch_up()
    assert projection.catch_up() == 0  # idempotent by offset
    rows = projection.conn.execute("SELECT account, balance, version FROM balances").fetchall()
    projection.close()
    assert {a: (v, {"balance": b}) for a, b, v in rows} == replayed
    total = sum(state["balance"] for _v, state in replayed.values())
    assert total == deposited - withdrawn  # transfers conserve money
    assert all(state["balance"] >= 0 for _v, state in replayed.values())
    events = [Event.decode(m.value()) for m in read_to_end(config, topics.events)]
    kinds = Counter(e.type for e in events)
    assert kinds["TransferDebited"] == kinds["TransferCredited"] == transfers
    per_command = Counter((e.aggregate, e.command_id) for e in events)
    assert max(per_command.values()) == 1  # no command decided twice
    assert stale_rejected > 0 and overdraft_rejected >= 1
