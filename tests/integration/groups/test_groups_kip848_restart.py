"""A confluent-kafka ``group.protocol=consumer`` (KIP-848) group survives a broker restart:
same member, same epoch, same assignment, no revocation, consumption resumes without
re-reading committed records."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer
from groups_helpers import create_topic, produce, wait_until

from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.testing.embedded import EmbeddedBroker


def _member_epochs(broker: EmbeddedBroker, group_id: str) -> dict[str, int]:
    group = broker.broker.groups.coordinator.group(group_id)
    assert isinstance(group, ConsumerGroup)
    return {m.member_id: m.member_epoch for m in group.members.values()}


def test_kip848_group_keeps_epochs_and_assignment_across_restart(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "k848", 4)
    first = [f"a{i}".encode() for i in range(40)]
    produce(bootstrap, "k848", first, 4)
    revoked: list[Any] = []
    members = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "g848",
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        for _ in range(2)
    ]
    seen: dict[bytes, int] = {}

    def poll() -> None:
        for c in members:
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                seen[msg.value()] = seen.get(msg.value(), 0) + 1

    try:
        for c in members:
            c.subscribe(["k848"], on_revoke=lambda _c, parts: revoked.append(parts))
        wait_until(
            lambda: len(seen) == len(first) and all(len(c.assignment()) == 2 for c in members),
            30,
            "two members sharing the first records",
            poll,
        )
        for c in members:
            c.commit(asynchronous=False)
        before = [sorted(tp.partition for tp in c.assignment()) for c in members]
        epochs = _member_epochs(broker, "g848")
        revoked.clear()
        seen.clear()  # before the commit a partition may move once (at-least-once)

        broker.restart()
        assert _member_epochs(broker, "g848") == epochs  # replayed, not rejoined
        second = [f"b{i}".encode() for i in range(40)]
        produce(broker.bootstrap_servers, "k848", second, 4)
        wait_until(lambda: set(second) <= set(seen), 30, "the records after the restart", poll)
        assert not set(first) & set(seen), "re-read records below the committed offsets"
        assert [sorted(tp.partition for tp in c.assignment()) for c in members] == before
        assert _member_epochs(broker, "g848") == epochs
        assert not [r for r in revoked if r], f"partitions revoked after restart: {revoked}"
        dups = sorted(v for v, n in seen.items() if n > 1)
        assert not dups, f"read again: {dups}"
    finally:
        for c in members:
            c.close()
