"""kill -9 of the broker at moments of a transaction (confluent-kafka producer): after
the restart every transaction is, for read_committed readers, wholly committed or wholly
aborted -- the records of a transaction in both partitions appear together or not at all,
and no partition is left with a last stable offset stuck below its end."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until

TIMEOUT_MS = 2000


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
        }
    )
    producer.init_transactions(30)
    return producer


def _produce(producer: Producer, tag: str, n: int = 4) -> None:
    for i in range(n):
        producer.produce("k", value=f"{tag}-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0


def _committed_values(bootstrap: str) -> list[str]:
    """read_committed from the start; waits until both partitions reach their end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition("k", p, 0) for p in range(2)])
    got: list[str] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 30
    while len(eof) < 2 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        error = msg.error()
        if error is not None:
            assert error.code() == -191, error  # _PARTITION_EOF
            eof.add(int(msg.partition() or 0))
            continue
        got.append((msg.value() or b"").decode())
    consumer.close()
    assert len(eof) == 2, "read_committed never reached the end of both partitions"
    return sorted(got)


def _settled(bootstrap: str) -> list[str]:
    """Once no transaction is open (the LSO is the log end in both partitions: the
    restarted broker re-sent its markers or timed the transaction out), the
    read_committed view."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def ends(level: Any) -> list[int]:
        specs = {
            TopicPartition("k", p): OffsetSpec.latest()  # type: ignore[no-untyped-call]
            for p in range(2)
        }
        futures = admin.list_offsets(specs, isolation_level=level, request_timeout=10)
        return [futures[TopicPartition("k", p)].result(10).offset for p in range(2)]

    wait_until(
        lambda: ends(IsolationLevel.READ_COMMITTED) == ends(IsolationLevel.READ_UNCOMMITTED),
        30,
        "every transaction decided",
    )
    return _committed_values(bootstrap)


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
        try:
            producer.commit_transaction(5)
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
