"""SIGKILL the Riverbed broker under a share consumer: acknowledged records stay done.

A ``riverbed broker`` child process serves a share group (``share.auto.offset.reset=
earliest``).  A first confluent-kafka ShareConsumer takes the first records and never
acknowledges them (its 60 s lock pins the share-partition start offset at 0), a second one
ACCEPTs every record it gets and commits (ShareAcknowledge) after each poll: once a commit
has returned, those acceptances were durable in ``__share_group_state`` (the broker
answers after the fsync), as acknowledged batches *above* the start offset.  The broker
is killed with SIGKILL, restarted on the same data directory, and a new consumer drains
the topic: no record whose ACCEPT was committed before the kill is delivered again, the
held records come back at once (locks are not persisted), and every record is delivered.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from riverbed.testing.broker_process import BrokerProcess, free_port
from riverbed.testing.kafka_share_reference import create_topic, set_share_group_config

TOPIC = "restart-queue"
GROUP = "restart-workers"
RECORDS = 300
CONFIG = {
    "offsets.topic.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.share.record.lock.duration.ms": "60000",
    "group.share.heartbeat.interval.ms": "500",
    "group.share.session.timeout.ms": "6000",
}


def consumer(bootstrap: str) -> Any:
    from confluent_kafka import ShareConsumer

    c: Any = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": 20,
        }
    )
    c.subscribe([TOPIC])
    return c


def consume(c: Any, stop: int, timeout_s: float, committed: set[int], delivered: list[int]) -> None:
    """ACCEPT and commit until ``committed`` holds ``stop`` offsets (or the deadline)."""
    from confluent_kafka import AcknowledgeType

    deadline = time.monotonic() + timeout_s
    while len(committed) < stop and time.monotonic() < deadline:
        batch = [m for m in c.poll(1.0) if m.error() is None]
        for m in batch:
            delivered.append(m.offset())
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        if batch:
            c.commit_sync(30.0)  # raises if the broker refused the acknowledgements
            committed.update(m.offset() for m in batch)


def test_committed_accepts_survive_a_broker_sigkill(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    broker = BrokerProcess(tmp_path / "data", free_port(), tmp_path / "broker.log", CONFIG)
    broker.start(timeout_s=180)
    try:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, TOPIC, partitions=1)
        set_share_group_config(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})
        producer: Any = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(RECORDS):
            producer.produce(TOPIC, value=f"job-{i}".encode(), partition=0)
        assert producer.flush(60) == 0

        holder = consumer(bootstrap)
        held: list[int] = []
        deadline = time.monotonic() + 120
        while not held and time.monotonic() < deadline:
            held = [m.offset() for m in holder.poll(1.0) if m.error() is None]
        assert held and min(held) == 0, broker.tail()

        before: set[int] = set()
        delivered_before: list[int] = []
        c = consumer(bootstrap)
        consume(c, RECORDS // 2, 120, before, delivered_before)
        assert len(before) >= RECORDS // 2, broker.tail()
        assert not before & set(held)
        broker.kill()
        for client in (c, holder):
            with contextlib.suppress(Exception):
                client.close()

        broker.start(timeout_s=180)
        after: set[int] = set()
        delivered_after: list[int] = []
        c = consumer(bootstrap)
        try:
            consume(c, RECORDS - len(before), 180, after, delivered_after)
        finally:
            with contextlib.suppress(Exception):
                c.close()
    finally:
        broker.close()

    again = before & set(delivered_after)
    assert not again, f"committed ACCEPTs delivered again after the restart: {sorted(again)}"
    assert set(held) <= after
    assert before | after == set(range(RECORDS)), broker.tail()
