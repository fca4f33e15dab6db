"""confluent-kafka (librdkafka) transactional producers and read_committed consumers
against an embedded broker: commit, abort, isolation levels, fencing, timeouts,
send_offsets_to_transaction and a broker restart in the middle of a transaction."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.testing.embedded import EmbeddedBroker


def _create(bootstrap: str, topic: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        fut.result(30)


def _producer(bootstrap: str, txn_id: str, **extra: Any) -> Producer:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **extra}
    )
    producer.init_transactions(30)
    return producer


def _send(producer: Producer, topic: str, values: list[bytes]) -> None:
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % 2)
    producer.flush(30)


def _read(
    bootstrap: str,
    topic: str,
    isolation: str,
    expect: int | None = None,
    partitions: int = 2,
    wait_s: float = 5.0,
) -> list[bytes]:
    """Values read from the start of every partition: until ``expect`` of them arrived,
    or until the end offsets (of this isolation level) are reached."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[bytes] = []
    eof: set[int] = set()
    deadline = time.monotonic() + (30 if expect is not None else wait_s)
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        error = msg.error()
        if error is not None:
            if error.code() == -191:  # _PARTITION_EOF
                eof.add(int(msg.partition() or 0))
                if expect is None and len(eof) == partitions:
                    break
                continue
            raise AssertionError(error)
        got.append(msg.value() or b"")
        if expect is not None and len(got) >= expect:
            break
    consumer.close()
    return sorted(got)


def test_commit_and_abort_seen_by_isolation_level(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "t")
    producer = _producer(bootstrap, "tx-1")
    producer.begin_transaction()
    _send(producer, "t", [b"c1", b"c2", b"c3"])
    producer.commit_transaction(30)
    producer.begin_transaction()
    _send(producer, "t", [b"a1", b"a2"])
    producer.abort_transaction(30)
    producer.begin_transaction()
    _send(producer, "t", [b"c4"])
    producer.commit_transaction(30)
    assert _read(bootstrap, "t", "read_committed", expect=4) == [b"c1", b"c2", b"c3", b"c4"]
    assert _read(bootstrap, "t", "read_committed") == [b"c1", b"c2", b"c3", b"c4"]
    assert _read(bootstrap, "t", "read_uncommitted", expect=6) == sorted(
        [b"c1", b"c2", b"c3", b"a1", b"a2", b"c4"]
    )


def test_open_transaction_is_invisible_to_read_committed(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "open")
    producer = _producer(bootstrap, "tx-open")
    producer.begin_transaction()
    _send(producer, "open", [b"o1", b"o2"])
    assert _read(bootstrap, "open", "read_committed") == []
    assert _read(bootstrap, "open", "read_uncommitted", expect=2) == [b"o1", b"o2"]
    producer.commit_transaction(30)
    assert _read(bootstrap, "open", "read_committed", expect=2) == [b"o1", b"o2"]


def test_zombie_producer_is_fenced(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "z")
    zombie = _producer(bootstrap, "tx-z")
    zombie.begin_transaction()
    _send(zombie, "z", [b"zombie"])
    successor = _producer(bootstrap, "tx-z")  # aborts the zombie's transaction
    successor.begin_transaction()
    _send(successor, "z", [b"new"])
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(30)
    assert raised.value.args[0].fatal() or raised.value.args[0].txn_requires_abort()
    assert _read(bootstrap, "z", "read_committed", expect=1) == [b"new"]
    assert _read(bootstrap, "z", "read_committed") == [b"new"]


def test_transaction_timeout_aborts(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "slow")
    producer = _producer(bootstrap, "tx-slow", **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    _send(producer, "slow", [b"late"])
    coordinator = broker.broker.transactions.coordinator
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        meta = coordinator.transaction("tx-slow")
        if meta is not None and meta.state.wire_name == "CompleteAbort":
            break
        time.sleep(0.05)
    assert meta is not None and meta.state.wire_name == "CompleteAbort"
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)
    assert _read(bootstrap, "slow", "read_committed") == []


def test_send_offsets_to_transaction_visible_only_on_commit(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "out")
    group = "eos-group"
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("out", 0, 0)])  # a simple (manual-assign) consumer
    producer = _producer(bootstrap, "tx-offsets")
    producer.begin_transaction()
    _send(producer, "out", [b"x"])
    producer.send_offsets_to_transaction(
        [TopicPartition("out", 0, 7)], consumer.consumer_group_metadata(), 30
    )

    unstable = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )

    def committed(reader: Any = consumer) -> int:
        return int(reader.committed([TopicPartition("out", 0)], 10)[0].offset)

    assert committed(unstable) < 0  # require_stable=false: the pending offset is not there
    with pytest.raises(KafkaException):  # read_committed (KIP-447): UNSTABLE_OFFSET_COMMIT
        consumer.committed([TopicPartition("out", 0)], 2)  # ... retried until the timeout
    producer.commit_transaction(30)
    deadline = time.monotonic() + 10
    while committed() != 7 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert committed() == 7
    producer.begin_transaction()
    producer.send_offsets_to_transaction(
        [TopicPartition("out", 0, 9)], consumer.consumer_group_metadata(), 30
    )
    producer.abort_transaction(30)
    assert committed() == 7
    assert committed(unstable) == 7
    unstable.close()
    consumer.close()


def test_restart_mid_transaction_is_consistent(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "r")
    producer = _producer(bootstrap, "tx-r", **{"transaction.timeout.ms": 3000})
    producer.begin_transaction()
    _send(producer, "r", [b"before-1", b"before-2"])
    broker.restart()
    bootstrap = broker.bootstrap_servers
    # The transaction was Ongoing: after the restart it times out and is aborted.
    coordinator = broker.broker.transactions.coordinator
    deadline = time.monotonic() + 20
    state = None
    while time.monotonic() < deadline:
        meta = coordinator.transaction("tx-r")
        state = None if meta is None else meta.state.wire_name
        if state == "CompleteAbort":
            break
        time.sleep(0.05)
    assert state == "CompleteAbort"
    assert _read(bootstrap, "r", "read_committed") == []
    assert _read(bootstrap, "r", "read_uncommitted", expect=2) == [b"before-1", b"before-2"]


def test_transactional_offsets_survive_a_restart_only_if_committed(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "in")
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "g-restart", "enable.auto.commit": False}
    )
    metadata = consumer.consumer_group_metadata()
    consumer.close()
    producer = _producer(bootstrap, "tx-restart")
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("in", 0, 7)], metadata, 30)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("in", 1, 9)], metadata, 30)
    producer.abort_transaction(30)
    broker.restart()
    check = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "g-restart",
            "enable.auto.commit": False,
        }
    )
    got = check.committed([TopicPartition("in", 0), TopicPartition("in", 1)], 10)
    check.close()
    assert [tp.offset for tp in got] == [7, -1001]
