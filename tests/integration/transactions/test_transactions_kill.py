"""kill -9 of the broker at moments of a transaction (confluent-kafka producer): after
the restart every transaction is, for read_committed readers, wholly committed or wholly
aborted -- the records of a transaction in both partitions appear together or not at all,
and no partition is left with a last stable offset stuck below its end."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until
from riverbed.testing.scenarios.transactions import end_offsets, read_all

TIMEOUT_MS = 2000
LOG = logging.getLogger(__name__)


@pytest.fixture
def process(tmp_path: Path) -> Any:
    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log")
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for fut in admin.create_topics([NewTopic("k", 2, 1)]).values():
        fut.result(30)
    yield broker
    broker.close()


def _producer(bootstrap: str, txn_id: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": TIMEOUT_MS,
            "linger.ms": 0,
            "message.timeout.ms": TIMEOUT_MS,
            # its reconnect errors (the kills, then the broker's close with the producer
            # still open) go to logging, which pytest captures, not to the run's stderr
            "logger": LOG,
        }
    )
    producer.init_transactions(30)
    return producer


def _produce(producer: Producer, tag: str, n: int = 4) -> None:
    for i in range(n):
        producer.produce("k", value=f"{tag}-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0


def _settled(bootstrap: str) -> list[str]:
    """Once no transaction is open (the LSO is the log end in both partitions: the
    restarted broker re-sent its markers or timed the transaction out), the
    read_committed view."""
    wait_until(
        lambda: (
            end_offsets(bootstrap, "k", committed=True)
            == end_offsets(bootstrap, "k", committed=False)
        ),
        30,
        "every transaction decided",
    )
    records = read_all(bootstrap, "k", "read_committed", timeout_s=30)
    return sorted(value.decode() for _, _, value in records)


def test_kill_with_an_open_transaction_aborts_it(process: BrokerProcess) -> None:
    producer = _producer(process.bootstrap_servers, "kill-open")
    producer.begin_transaction()
    _produce(producer, "committed")
    producer.commit_transaction(30)
    producer.begin_transaction()
    _produce(producer, "open")
    process.kill()
    process.start()  # the open transaction times out after the restart and is aborted
    assert _settled(process.bootstrap_servers) == [f"committed-{i}" for i in range(4)]


def test_kill_right_after_commit_keeps_the_commit(process: BrokerProcess) -> None:
    producer = _producer(process.bootstrap_servers, "kill-commit")
    producer.begin_transaction()
    _produce(producer, "c")
    producer.commit_transaction(30)  # answered once PrepareCommit is durable
    process.kill()
    process.start()  # replay finds PrepareCommit (at least): the markers are re-sent
    assert _settled(process.bootstrap_servers) == [f"c-{i}" for i in range(4)]


@pytest.mark.parametrize("delay_ms", [0, 2, 5, 10, 20])
def test_kill_during_commit_is_all_or_nothing(process: BrokerProcess, delay_ms: int) -> None:
    producer = _producer(process.bootstrap_servers, f"kill-race-{delay_ms}")
    producer.begin_transaction()
    _produce(producer, "r")
    outcome: list[object] = []

    def commit() -> None:
        try:  # killed before its answer, the commit gives up after 2 s (then the restart)
            producer.commit_transaction(2)
            outcome.append("committed")
        except KafkaException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=commit)
    thread.start()
    time.sleep(delay_ms / 1000)
    process.kill()
    thread.join(30)
    process.start()
    values = _settled(process.bootstrap_servers)
    assert values in ([], [f"r-{i}" for i in range(4)]), values
    if outcome == ["committed"]:  # an acknowledged commit is never lost
        assert values == [f"r-{i}" for i in range(4)]
