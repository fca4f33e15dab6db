"""Share groups (KIP-932) with confluent-kafka's ``ShareConsumer`` against a broker process.

Each test first warms its consumers up (:func:`share_helpers.warm_up`: share partitions
start at the latest offset), then produces what it checks.  The broker's record lock is
:data:`share_helpers.LOCK_MS`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Consumer
from share_helpers import (
    BROKER_CONFIG,
    LOCK_MS,
    close_all,
    create_topic,
    poll,
    produce,
    set_group_configs,
    share_consumer,
    warm_up,
)

from riverbed.testing.broker_process import BrokerProcess, free_port

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker process for the whole module (conftest's is one per test): no test here
    stops or kills the broker, and each uses its own topics and groups."""
    root = tmp_path_factory.mktemp("share-consumers")
    broker = BrokerProcess(root / "data", free_port(), root / "broker.log", BROKER_CONFIG, "INFO")
    broker.start(timeout_s=120)
    try:
        yield broker
    finally:
        broker.close()


def test_more_consumers_than_partitions_all_get_work_one_at_a_time(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "work", 2)
    consumers = [share_consumer(bs, "workers", "work") for _ in range(4)]
    try:
        warm_up(consumers, bs, "work", 2)
        produce(bs, "work", [f"job-{i}".encode() for i in range(200)], 2)
        by_consumer: Counter[int] = Counter()
        deliveries: Counter[bytes] = Counter()
        held: dict[tuple[int, int], int] = {}
        deadline = time.monotonic() + 120
        while len(deliveries) < 200:
            assert time.monotonic() < deadline, f"{len(deliveries)} of 200 delivered"
            for i, consumer in enumerate(consumers):
                msgs = poll(consumer, 0.05)
                for m in msgs:
                    key = (m.partition() or 0, m.offset() or 0)
                    assert key not in held, f"{key} held by consumer {held[key]} and {i}"
                    held[key] = i
                    deliveries[m.value() or b""] += 1
                    by_consumer[i] += 1
                time.sleep(0.01 * len(msgs))  # some work: the others fetch meanwhile
                for m in msgs:
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                    del held[(m.partition() or 0, m.offset() or 0)]
                if msgs:
                    consumer.commit_sync(30)
        assert set(deliveries) == {f"job-{i}".encode() for i in range(200)}
        assert max(deliveries.values()) == 1, "an ACCEPTed record was delivered twice"
        assert len(by_consumer) == 4, f"work per consumer: {dict(by_consumer)}"
    finally:
        close_all(consumers)


def test_release_redelivers_with_a_higher_count_and_reject_never_again(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "acks", 1)
    consumer = share_consumer(bs, "ackers", "acks")
    try:
        warm_up([consumer], bs, "acks", 1)
        produce(bs, "acks", [f"r{i}".encode() for i in range(10)], 1)
        counts: dict[bytes, list[int]] = {}
        deadline = time.monotonic() + 60
        done_at = None
        while done_at is None or time.monotonic() < done_at + 2.0:  # then 2 s more
            assert time.monotonic() < deadline, f"deliveries: {counts}"
            msgs = poll(consumer, 0.2)
            for m in msgs:
                value = m.value() or b""
                counts.setdefault(value, []).append(m.delivery_count())
                n = int(value[1:])
                if len(counts[value]) == 1:  # first delivery: evens RELEASE, odds REJECT
                    ack = AcknowledgeType.RELEASE if n % 2 == 0 else AcknowledgeType.REJECT
                else:
                    ack = AcknowledgeType.ACCEPT
                consumer.acknowledge(m, ack)
            if msgs:
                consumer.commit_sync(30)
            evens_back = all(len(counts.get(f"r{i}".encode(), [])) == 2 for i in range(0, 10, 2))
            if done_at is None and evens_back and len(counts) == 10:
                done_at = time.monotonic()
        for i in range(10):
            seen = counts[f"r{i}".encode()]
            if i % 2 == 0:
                assert seen == [1, 2], (i, seen)  # RELEASEd: again, with a higher count
            else:
                assert seen == [1], (i, seen)  # REJECTed: never again
    finally:
        close_all([consumer])


HOLDER = """
import sys, time
sys.path.insert(0, {here!r})
from share_helpers import poll, share_consumer, warm_up
c = share_consumer({bs!r}, "crashers", "held")
warm_up([c], {bs!r}, "held", 1)
print("READY", flush=True)
held = []
while len(held) < 5:
    held += [m.offset() for m in poll(c, 0.2)]
print("HELD", *sorted(held), flush=True)
time.sleep(600)
"""


def test_records_of_a_sigkilled_consumer_are_redelivered(
    share_broker: BrokerProcess,
) -> None:
    """The kernel closes the killed consumer's sockets: its share session closes with its
    connection and its records are released at once, with their delivery counts (Kafka
    4.4 does the same); were the connection kept, the lock would release them."""
    bs = share_broker.bootstrap_servers
    create_topic(bs, "held", 1)
    script = textwrap.dedent(HOLDER).format(here=str(HERE), bs=bs)
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "READY"
        produce(bs, "held", [f"h{i}".encode() for i in range(5)], 1)
        line = holder.stdout.readline().split()
        assert line and line[0] == "HELD", line
        held = [int(x) for x in line[1:]]
        os.kill(holder.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        holder.wait(30)
        consumer = share_consumer(bs, "crashers", "held")
        try:
            again: dict[int, int] = {}
            while len(again) < 5:
                assert time.monotonic() < killed_at + LOCK_MS / 1000 + 60, again
                for m in poll(consumer, 0.2):
                    again[m.offset() or 0] = m.delivery_count()
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                if again:
                    consumer.commit_sync(30)
            delay = time.monotonic() - killed_at
            assert sorted(again) == held
            assert set(again.values()) == {2}, again
            print(f"redelivered {len(again)} records {delay:.2f}s after the SIGKILL")
        finally:
            close_all([consumer])
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)


def test_two_share_groups_both_get_everything(share_broker: BrokerProcess) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "fan", 2)
    a = share_consumer(bs, "fan-a", "fan")
    b = share_consumer(bs, "fan-b", "fan")
    try:
        warm_up([a], bs, "fan", 2)
        warm_up([b], bs, "fan", 2)
        produce(bs, "fan", [f"f{i}".encode() for i in range(50)], 2)
        got: dict[int, set[bytes]] = {0: set(), 1: set()}
        deadline = time.monotonic() + 60
        while min(len(s) for s in got.values()) < 50:
            assert time.monotonic() < deadline, {k: len(v) for k, v in got.items()}
            for i, consumer in enumerate((a, b)):
                msgs = poll(consumer, 0.1)
                for m in msgs:
                    got[i].add(m.value() or b"")
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                if msgs:
                    consumer.commit_sync(30)
        assert got[0] == got[1] == {f"f{i}".encode() for i in range(50)}
    finally:
        close_all([a, b])


def test_a_consumer_group_and_a_share_group_on_one_topic_are_independent(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "both", 1)
    share = share_consumer(bs, "both-share", "both")
    classic = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "both-consumers",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    classic.subscribe(["both"])
    try:
        warm_up([share], bs, "both", 1)
        produce(bs, "both", [f"b{i}".encode() for i in range(30)], 1)
        shared: set[bytes] = set()
        plain: set[bytes] = set()
        want = {f"b{i}".encode() for i in range(30)}
        deadline = time.monotonic() + 90
        while not (want <= shared and want <= plain):
            assert time.monotonic() < deadline, (len(shared), len(plain))
            msgs = poll(share, 0.1)
            for m in msgs:
                shared.add(m.value() or b"")
                share.acknowledge(m, AcknowledgeType.ACCEPT)
            if msgs:
                share.commit_sync(30)
            m = classic.poll(0.1)
            if m is not None and m.error() is None:
                plain.add(m.value() or b"")
        assert want <= plain and shared == want
    finally:
        classic.close()
        close_all([share])


def test_a_record_released_up_to_the_delivery_limit_is_archived(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "limit", 1)
    set_group_configs(bs, "limited", share_delivery_count_limit="2")
    consumer = share_consumer(bs, "limited", "limit")
    try:
        warm_up([consumer], bs, "limit", 1)
        produce(bs, "limit", [b"poison", b"fine"], 1)
        counts: dict[bytes, list[int]] = {}
        deadline = time.monotonic() + 60
        done_at = None
        while done_at is None or time.monotonic() < done_at + 2.0:  # then 2 s more
            assert time.monotonic() < deadline, counts
            msgs = poll(consumer, 0.2)
            for m in msgs:
                value = m.value() or b""
                counts.setdefault(value, []).append(m.delivery_count())
                poison = value == b"poison"
                consumer.acknowledge(
                    m, AcknowledgeType.RELEASE if poison else AcknowledgeType.ACCEPT
                )
            if msgs:
                consumer.commit_sync(30)
            if done_at is None and len(counts.get(b"poison", [])) == 2 and b"fine" in counts:
                done_at = time.monotonic()
        assert counts == {b"poison": [1, 2], b"fine": [1]}  # archived after 2 deliveries
    finally:
        close_all([consumer])
