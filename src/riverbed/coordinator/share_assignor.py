"""The share group assignor (Kafka's ``SimpleAssignor`` for share groups, KIP-932).

A share group's partitions are not owned: several members may fetch one partition at the
same time (the share partition hands each record to one of them under a lock).  So the
assignor only spreads the load, per topic, among the members subscribed to it::

    members <= partitions: partition p -> subscribers[p % M]     (each partition once)
        4 partitions, 2 members:  A {0,2}  B {1,3}
    members >  partitions: subscribers[i] -> partition i % P     (partitions shared)
        2 partitions, 5 members:  A {0}  B {1}  C {0}  D {1}  E {0}

Subscribers are taken in member-id order, so the result is a pure function of the
subscriptions and partition counts (deterministic, no stickiness needed: moving a
partition between members of a share group revokes nothing).  Pure; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping

Assignment = dict[str, dict[str, frozenset[int]]]
"""member id -> topic name -> partitions."""


def assign(
    subscriptions: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int]
) -> Assignment:
    """The target assignment of every member in ``subscriptions`` (member id -> topics)
    over the topics of ``partition_counts`` (topics missing there are not assigned)."""
    out: dict[str, dict[str, set[int]]] = {m: {} for m in subscriptions}
    for topic, count in sorted(partition_counts.items()):
        if count <= 0:
            continue
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        if len(members) <= count:
            for p in range(count):
                out[members[p % len(members)]].setdefault(topic, set()).add(p)
        else:
            for i, member in enumerate(members):
                out[member].setdefault(topic, set()).add(i % count)
    return {m: {t: frozenset(ps) for t, ps in topics.items()} for m, topics in out.items()}
