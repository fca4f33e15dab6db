"""Transaction scenarios driven by confluent-kafka (librdkafka 2.16), for the
differential suite: the same calls against Apache Kafka and Riverbed must give the same
plain results (offsets included: each COMMIT/ABORT marker takes one offset in both).

Each function takes ``bootstrap`` and a fresh topic (2+ partitions) and returns plain
data; clients are created and closed per call.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

PARTITION_EOF = -191  # librdkafka's _PARTITION_EOF


@dataclass(frozen=True, slots=True)
class TxnOutcome:
    """What readers of a topic see after a scenario's transactions."""

    read_committed: tuple[tuple[int, int, bytes], ...]
    """(partition, offset, value) of every record a read_committed consumer gets."""
    read_uncommitted: tuple[tuple[int, int, bytes], ...]
    end_offsets_committed: tuple[int, ...]
    """ListOffsets latest per partition under read_committed (the LSO)."""
    end_offsets_uncommitted: tuple[int, ...]
    fenced: str = ""
    """The error name a fenced producer's commit got ("" when none was fenced)."""


def _producer(bootstrap: str, txn_id: str, **extra: Any) -> Any:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **extra}
    )
    producer.init_transactions(60)
    return producer


def _send(producer: Any, topic: str, values: list[bytes]) -> None:
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % 2)
    producer.flush(30)


def read_all(
    bootstrap: str, topic: str, isolation: str, partitions: int = 2, timeout_s: float = 30.0
) -> tuple[tuple[int, int, bytes], ...]:
    """Every record from offset 0 until each partition's end (of this isolation level)."""
    from confluent_kafka import Consumer, TopicPartition

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
    got: list[tuple[int, int, bytes]] = []
    eof: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(eof) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{isolation} read of {topic} did not reach the end")
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() != PARTITION_EOF:
                    raise RuntimeError(str(error))
                eof.add(int(msg.partition() or 0))
                continue
            got.append((int(msg.partition() or 0), int(msg.offset() or 0), msg.value() or b""))
    finally:
        consumer.close()
    return tuple(sorted(got))


def end_offsets(
    bootstrap: str, topic: str, committed: bool, partitions: int = 2
) -> tuple[int, ...]:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    futures = admin.list_offsets(
        {
            TopicPartition(topic, p): OffsetSpec.latest()  # type: ignore[no-untyped-call]
            for p in range(partitions)
        },
        isolation_level=level,
        request_timeout=30,
    )
    return tuple(futures[TopicPartition(topic, p)].result(30).offset for p in range(partitions))


def commit_abort_fence(bootstrap: str, topic: str) -> TxnOutcome:
    """A committed, an aborted and a committed transaction of one producer, then a zombie
    fenced by a second instance of another transactional id whose open transaction is
    aborted by the fence; a last transaction left open (hidden from read_committed)."""
    from confluent_kafka import KafkaException

    txn = f"txn-{uuid.uuid4()}"
    producer = _producer(bootstrap, txn)
    for values, commit in (([b"c1", b"c2", b"c3"], True), ([b"a1", b"a2"], False), ([b"c4"], True)):
        producer.begin_transaction()
        _send(producer, topic, values)
        if commit:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    zombie_id = f"zombie-{uuid.uuid4()}"
    zombie = _producer(bootstrap, zombie_id)
    zombie.begin_transaction()
    _send(zombie, topic, [b"z1"])
    successor = _producer(bootstrap, zombie_id)
    successor.begin_transaction()
    _send(successor, topic, [b"s1", b"s2"])
    successor.commit_transaction(60)
    fenced = ""
    try:
        zombie.commit_transaction(30)
    except KafkaException as exc:
        from riverbed.testing.scenarios.confluent import error_name

        fenced = error_name(exc.args[0])
    producer.begin_transaction()
    _send(producer, topic, [b"open"])
    try:
        return TxnOutcome(
            read_all(bootstrap, topic, "read_committed"),
            read_all(bootstrap, topic, "read_uncommitted"),
            end_offsets(bootstrap, topic, True),
            end_offsets(bootstrap, topic, False),
            fenced,
        )
    finally:
        producer.abort_transaction(60)
