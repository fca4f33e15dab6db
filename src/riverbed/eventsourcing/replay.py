"""Reading topics to their end (read_committed) and rebuilding state from them.

* :func:`read_to_end` yields every committed record of some partitions from given offsets
  up to the last stable offset seen when each partition's end is reached (records of
  aborted transactions are skipped by the client; an open transaction makes it wait).
* :func:`load_partition` is what a writer reads when it takes over a partition: the latest
  snapshot per aggregate of the compacted ``<app>.snapshots`` partition, then the events
  written after those snapshots; :func:`live_state` does it for every partition.
* :func:`replay` rebuilds every aggregate from ``<app>.events`` at offset 0 through the
  aggregate's ``evolve``: it must equal the snapshots and the live state (tested).

Each call opens and closes its own consumer (no group, nothing committed): thread-safe.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from riverbed.errors import EventSourcingError
from riverbed.eventsourcing.model import Aggregate, AppTopics, Event, Snapshot, State


def partition_count(config: Mapping[str, Any], topic: str, timeout_s: float = 15.0) -> int:
    """How many partitions ``topic`` has (an error when it does not exist)."""
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(dict(config)).list_topics(topic, timeout=timeout_s)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise EventSourcingError(f"topic {topic!r} does not exist")
    return len(found.partitions)


def read_to_end(
    config: Mapping[str, Any],
    topic: str,
    start: Mapping[int, int] | None = None,
    *,
    timeout_s: float = 120.0,
) -> Iterator[Any]:
    """Committed records of ``topic`` from ``start`` (partition -> offset; default: every
    partition from 0) to each partition's end.  Yields confluent-kafka messages."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    if start is None:
        start = dict.fromkeys(range(partition_count(config, topic)), 0)
    if not start:
        return
    consumer = Consumer(
        {
            **config,
            "group.id": f"riverbed-es-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, off) for p, off in start.items()])
        pending = set(start)
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise EventSourcingError(f"timed out reading {topic} to its end")
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(msg.partition())
                    continue
                raise EventSourcingError(f"cannot read {topic}: {error}")
            yield msg
    finally:
        consumer.close()


def load_snapshots(
    config: Mapping[str, Any], topics: AppTopics, partition: int
) -> dict[str, Snapshot]:
    """The latest snapshot of each aggregate of ``partition`` (what a new owner loads)."""
    out: dict[str, Snapshot] = {}
    for msg in read_to_end(config, topics.snapshots, {partition: 0}):
        value = msg.value()
        if value is not None:
            snapshot = Snapshot.decode(value)
            out[snapshot.aggregate] = snapshot
    return out


def load_partition(
    config: Mapping[str, Any], topics: AppTopics, aggregate: Aggregate, partition: int
) -> tuple[dict[str, tuple[int, State]], int]:
    """A partition's aggregates as of its last committed transaction: the snapshots, then
    the events after them (from the lowest snapshot ``events_from``; every aggregate has a
    snapshot from its first transaction on).  Returns ``({id: (version, state)}, end)``,
    ``end`` being an offset at or below every event written after this load.

    Raises :class:`EventSourcingError` on a version gap after a snapshot."""
    snapshots = load_snapshots(config, topics, partition)
    states = {s.aggregate: (s.version, s.state) for s in snapshots.values()}
    start = min((s.events_from for s in snapshots.values()), default=0)
    end = start
    for msg in read_to_end(config, topics.events, {partition: start}):
        end = msg.offset() + 1
        event = Event.decode(msg.value())
        version, state = states.get(event.aggregate, (0, aggregate.initial_state()))
        if event.version <= version:
            continue  # in the snapshot already
        if event.version != version + 1:
            raise EventSourcingError(
                f"aggregate {event.aggregate!r}: event version {event.version} after "
                f"{version} at {topics.events}[{partition}]@{msg.offset()}"
            )
        states[event.aggregate] = (event.version, aggregate.evolve(state, event))
    return states, end


def live_state(
    config: Mapping[str, Any], topics: AppTopics, aggregate: Aggregate
) -> dict[str, tuple[int, State]]:
    """Every aggregate as a writer would load it (snapshots + the events after them)."""
    out: dict[str, tuple[int, State]] = {}
    for partition in range(partition_count(config, topics.snapshots)):
        out.update(load_partition(config, topics, aggregate, partition)[0])
    return out


def all_snapshots(config: Mapping[str, Any], topics: AppTopics) -> dict[str, Snapshot]:
    """The latest snapshot of every aggregate, all partitions."""
    out: dict[str, Snapshot] = {}
    for msg in read_to_end(config, topics.snapshots):
        if msg.value() is not None:
            snapshot = Snapshot.decode(msg.value())
            out[snapshot.aggregate] = snapshot
    return out


def replay(
    config: Mapping[str, Any], topics: AppTopics, aggregate: Aggregate
) -> dict[str, tuple[int, State]]:
    """Every aggregate rebuilt from ``<app>.events`` at offset 0: ``{id: (version, state)}``.

    Raises :class:`EventSourcingError` when an aggregate's versions are not 1, 2, 3, ...
    in log order (a lost or duplicated event)."""
    out: dict[str, tuple[int, State]] = {}
    for msg in read_to_end(config, topics.events):
        event = Event.decode(msg.value())
        version, state = out.get(event.aggregate, (0, aggregate.initial_state()))
        if event.version != version + 1:
            raise EventSourcingError(
                f"aggregate {event.aggregate!r}: event version {event.version} after "
                f"{version} at {topics.events}[{msg.partition()}]@{msg.offset()}"
            )
        out[event.aggregate] = (event.version, aggregate.evolve(state, event))
    return out
