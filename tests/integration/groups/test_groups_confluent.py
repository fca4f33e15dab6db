"""confluent-kafka consumer groups against the broker: classic (client-side assignors) and
KIP-848 (``group.protocol=consumer``, server-side assignor), fan-out, committed offsets
across a broker restart, and at-least-once resumption from committed offsets."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from groups_helpers import create_topic, produce, wait_until

from riverbed.testing.embedded import EmbeddedBroker

PARTITIONS = 6


def consumer(bootstrap: str, group: str, protocol: str = "classic", **extra: Any) -> Consumer:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "group.protocol": protocol,
        "enable.auto.commit": False,
    }
    if protocol == "classic":
        conf |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    return Consumer(conf | extra)


def assignments_cover(consumers: list[Consumer], partitions: int) -> bool:
    """Every member has partitions and together they own each partition exactly once."""
    owned = [{tp.partition for tp in c.assignment()} for c in consumers]
    flat = [p for ps in owned for p in ps]
    return all(owned) and sorted(flat) == list(range(partitions))


def poll_all(consumers: list[Consumer], seen: dict[bytes, list[int]]) -> None:
    for i, c in enumerate(consumers):
        msg = c.poll(0.05)
        if msg is not None and msg.error() is None:
            seen.setdefault(msg.value(), []).append(i)


@pytest.mark.parametrize(
    ("protocol", "extra"),
    [
        ("classic", {"partition.assignment.strategy": "range"}),
        ("classic", {"partition.assignment.strategy": "roundrobin"}),
        ("classic", {"partition.assignment.strategy": "cooperative-sticky"}),
        ("consumer", {}),
    ],
    ids=["classic-range", "classic-roundrobin", "classic-cooperative-sticky", "kip848"],
)
def test_three_members_share_a_topic(
    broker: EmbeddedBroker, protocol: str, extra: dict[str, Any]
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "shared", PARTITIONS)
    members = [consumer(bootstrap, "g", protocol, **extra) for _ in range(3)]
    try:
        for c in members:
            c.subscribe(["shared"])
        seen: dict[bytes, list[int]] = {}
        wait_until(
            lambda: assignments_cover(members, PARTITIONS),
            30,
            "a balanced group",
            lambda: poll_all(members, seen),
        )
        values = [f"v{i}".encode() for i in range(120)]
        produce(bootstrap, "shared", values, PARTITIONS)
        wait_until(
            lambda: len(seen) == len(values), 30, "every record", lambda: poll_all(members, seen)
        )
        assert sorted(seen) == sorted(values)
        assert all(len(who) == 1 for who in seen.values()), "a record reached two members"
        assert len({who[0] for who in seen.values()}) == 3
    finally:
        for c in members:
            c.close()


def test_two_groups_each_see_every_record(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "fan", 3)
    values = [f"r{i}".encode() for i in range(60)]
    produce(bootstrap, "fan", values, 3)
    groups = {g: consumer(bootstrap, g) for g in ("billing", "audit")}
    seen: dict[str, dict[bytes, list[int]]] = {g: {} for g in groups}
    try:
        for c in groups.values():
            c.subscribe(["fan"])
        wait_until(
            lambda: all(len(s) == len(values) for s in seen.values()),
            30,
            "both groups to read everything",
            lambda: [poll_all([c], seen[g]) for g, c in groups.items()],
        )
    finally:
        for c in groups.values():
            c.close()
    assert sorted(seen["billing"]) == sorted(seen["audit"]) == sorted(values)


def test_committed_offsets_survive_a_restart_and_resume_at_least_once(
    broker: EmbeddedBroker,
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "orders", 3)
    first = [f"a{i}".encode() for i in range(30)]
    produce(bootstrap, "orders", first, 3)
    c = consumer(bootstrap, "resume")
    c.subscribe(["orders"])
    got: dict[bytes, list[int]] = {}
    wait_until(lambda: len(got) == 30, 30, "the first records", lambda: poll_all([c], got))
    c.commit(asynchronous=False)
    committed = {
        tp.partition: tp.offset
        for tp in c.committed([TopicPartition("orders", p) for p in range(3)], timeout=10)
    }
    assert committed == {0: 10, 1: 10, 2: 10}
    c.commit(offsets=[TopicPartition("orders", 0, 10, metadata="batch-7")], asynchronous=False)
    c.close()

    broker.restart()
    bootstrap = broker.bootstrap_servers
    second = [f"b{i}".encode() for i in range(30)]
    produce(bootstrap, "orders", second, 3)
    c = consumer(bootstrap, "resume")
    try:
        after = c.committed([TopicPartition("orders", p) for p in range(3)], timeout=10)
        assert {tp.partition: tp.offset for tp in after} == committed
        assert after[0].metadata == "batch-7"
        c.subscribe(["orders"])
        resumed: dict[bytes, list[int]] = {}
        wait_until(
            lambda: set(second) <= set(resumed),
            30,
            "the records after the commit",
            lambda: poll_all([c], resumed),
        )
        assert not set(first) & set(resumed), "re-read records below the committed offset"
    finally:
        c.close()
