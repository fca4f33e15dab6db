"""Server-side partition assignors for KIP-848 consumer groups: ``uniform`` and ``range``.

An assignor maps members' subscriptions and the topics' partition counts to a *target
assignment* (member id -> topic -> partitions).  Output invariant, checked by the
property tests: every partition of a subscribed topic goes to exactly one member that
subscribes to the topic; no partition twice.  Pure and deterministic (members and
topics are visited in sorted order); thread-safe.

* ``range`` (Kafka's server-side RangeAssignor): per topic, the subscribers sorted by
  member id get contiguous ranges; the first ``partitions % members`` get one more.
* ``uniform`` (Kafka's UniformAssignor, simplified): sticky and balanced.  Partitions keep
  their current owner while it stays subscribed and under quota; the rest go to the
  least-loaded subscriber; then partitions move from the most to the least loaded
  subscriber until no two eligible members differ by more than one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

Assignment = dict[str, frozenset[int]]


class PartitionAssignor(Protocol):
    name: str

    def assign(
        self,
        subscriptions: Mapping[str, frozenset[str]],
        partition_counts: Mapping[str, int],
        current: Mapping[str, Mapping[str, frozenset[int]]],
    ) -> dict[str, Assignment]:
        """``subscriptions``: member -> topics; ``partition_counts``: topic -> count (topics
        that do not exist are absent); ``current``: the previous target assignment."""
        ...


def _freeze(raw: Mapping[str, Mapping[str, set[int]]]) -> dict[str, Assignment]:
    return {m: {t: frozenset(ps) for t, ps in topics.items() if ps} for m, topics in raw.items()}


class RangeAssignor:
    name = "range"

    def assign(
        self,
        subscriptions: Mapping[str, frozenset[str]],
        partition_counts: Mapping[str, int],
        current: Mapping[str, Mapping[str, frozenset[int]]],
    ) -> dict[str, Assignment]:
        out: dict[str, dict[str, set[int]]] = {m: {} for m in subscriptions}
        for topic in sorted(partition_counts):
            subscribers = sorted(m for m, ts in subscriptions.items() if topic in ts)
            if not subscribers:
                continue
            n = partition_counts[topic]
            per, extra = divmod(n, len(subscribers))
            start = 0
            for i, m in enumerate(subscribers):
                size = per + (1 if i < extra else 0)
                if size:
                    out[m][topic] = set(range(start, start + size))
                start += size
        return _freeze(out)


class UniformAssignor:
    name = "uniform"

    def assign(
        self,
        subscriptions: Mapping[str, frozenset[str]],
        partition_counts: Mapping[str, int],
        current: Mapping[str, Mapping[str, frozenset[int]]],
    ) -> dict[str, Assignment]:
        members = sorted(subscriptions)
        owner: dict[tuple[str, int], str] = {}
        load = dict.fromkeys(members, 0)
        all_partitions = [
            (t, p)
            for t in sorted(partition_counts)
            for p in range(partition_counts[t])
            if any(t in subscriptions[m] for m in members)
        ]
        quota = -(-len(all_partitions) // len(members)) if members else 0
        for m in members:  # stickiness: keep what is still valid, up to the quota
            for t, ps in sorted(current.get(m, {}).items()):
                if t not in subscriptions[m]:
                    continue
                for p in sorted(ps):
                    if p < partition_counts.get(t, 0) and (t, p) not in owner and load[m] < quota:
                        owner[(t, p)] = m
                        load[m] += 1
        for tp in all_partitions:
            if tp not in owner:
                eligible = [m for m in members if tp[0] in subscriptions[m]]
                best = min(eligible, key=lambda m: (load[m], m))
                owner[tp] = best
                load[best] += 1
        self._balance(owner, load, subscriptions)
        out: dict[str, dict[str, set[int]]] = {m: {} for m in members}
        for (t, p), m in owner.items():
            out[m].setdefault(t, set()).add(p)
        return _freeze(out)

    @staticmethod
    def _balance(
        owner: dict[tuple[str, int], str],
        load: dict[str, int],
        subscriptions: Mapping[str, frozenset[str]],
    ) -> None:
        moved = True
        while moved:
            moved = False
            for tp in sorted(owner):
                src = owner[tp]
                eligible = [m for m in load if tp[0] in subscriptions[m]]
                dst = min(eligible, key=lambda m: (load[m], m))
                if load[src] - load[dst] > 1:
                    owner[tp] = dst
                    load[src] -= 1
                    load[dst] += 1
                    moved = True


ASSIGNORS: dict[str, PartitionAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}
