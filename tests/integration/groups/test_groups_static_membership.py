"""Static membership (``group.instance.id``) with confluent-kafka's classic protocol: a
member that restarts (librdkafka static members send no LeaveGroup on close) comes back
within the session timeout to the same partitions, with no rebalance for the others
(their generation is unchanged); a member that does not come back is removed and its
partitions move."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer
from groups_helpers import create_topic, wait_until

from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.testing.embedded import EmbeddedBroker

TOPIC, GROUP, PARTITIONS = "static", "static-g", 4


def _member(bootstrap: str, instance: str, revoked: list[Any]) -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "group.instance.id": instance,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "max.poll.interval.ms": 6000,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
        }
    )
    c.subscribe([TOPIC], on_revoke=lambda _c, parts: revoked.append((instance, parts)))
    return c


def _owned(c: Consumer) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


def _group(broker: EmbeddedBroker) -> ClassicGroup:
    group = broker.broker.groups.coordinator.group(GROUP)
    assert isinstance(group, ClassicGroup)
    return group


def test_static_member_restart_keeps_partitions_and_generation(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, TOPIC, PARTITIONS)
    revoked: list[Any] = []
    a, b = _member(bootstrap, "a", revoked), _member(bootstrap, "b", revoked)
    members = [a, b]
    try:

        def poll() -> None:
            for c in members:
                c.poll(0.05)

        wait_until(
            lambda: len(_owned(a)) == 2 and len(_owned(b)) == 2, 30, "a balanced static group", poll
        )
        generation, a_parts, b_parts = _group(broker).generation_id, _owned(a), _owned(b)
        revoked.clear()

        a.close()  # a static member: no LeaveGroup
        members = [b]
        assert "a" in _group(broker).static_members
        a = _member(bootstrap, "a", revoked)
        members = [a, b]
        wait_until(lambda: _owned(a) == a_parts, 5, "the restarted member's partitions", poll)
        for _ in range(10):
            poll()
        assert _group(broker).generation_id == generation, "the others were rebalanced"
        assert _owned(b) == b_parts
        assert not [who for who, _ in revoked if who == "b"], "b had to give partitions up"

        a.close()  # gone for good: removed after its session, its partitions move to b
        members = [b]
        wait_until(lambda: len(_owned(b)) == PARTITIONS, 20, "b to take over a's partitions", poll)
        assert set(_group(broker).static_members) == {"b"}
        assert _group(broker).generation_id > generation
    finally:
        for c in members:
            c.close()
