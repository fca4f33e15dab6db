"""The command writer: the single writer of each partition's aggregates.

::

    writer = CommandWriter(config, AppTopics("bank"), BankAccount(), writer_id="w1")
    writer.run(stop)          # until stop is set; raises WriterFencedError when replaced

**One writer per partition.**  Writers join the consumer group ``<app>.writers`` on
``<app>.commands``; the group gives each partition to one member.  Commands of an aggregate
all land on one partition (key = aggregate id), so each aggregate has one writer at a time.
On the first command of a newly assigned partition the writer loads that partition's
aggregates: the latest snapshots from ``<app>.snapshots``, then the events written after
them from ``<app>.events`` (read_committed, to the end; see
:func:`~riverbed.eventsourcing.replay.load_partition`).

**One transaction per batch.**  The writer consumes a batch of commands and, in one Kafka
transaction (``transactional.id = <app>.writer.<writer_id>``): for each command checks
``expected_version`` (a mismatch is rejected: ``stale version: expected 3, account a-1 is
at 5``), calls ``decide``, numbers and appends the events to ``<app>.events`` (same
partition, key = aggregate id), sends the decision's commands to other aggregates, writes
the reply, then a snapshot of each aggregate it changed that is new or ``snapshot_every``
versions past its last snapshot to ``<app>.snapshots`` (same partition; every aggregate
has a snapshot from its first transaction on, so loading never reads events from 0) and
the consumed offsets (``send_offsets_to_transaction`` with the group metadata, KIP-447),
and commits.  Events, snapshots, replies, outgoing commands and the
command offsets become visible together or not at all (to read_committed readers).

**Fencing.**  A writer restarted with the same ``writer_id`` calls ``init_transactions``
with the same transactional id: the broker bumps the epoch, aborts the old instance's open
transaction, and the old instance (a zombie: paused, partitioned away) fails its next
transactional call with a fencing error -> :class:`WriterFencedError`.  A writer that lost
its partitions in a rebalance cannot commit offsets any more (the group generation fences
its ``TxnOffsetCommit``), so its transaction aborts.

**Crash behaviour.**  A SIGKILL leaves at most one open transaction, aborted when the same
``writer_id`` starts again (or after ``transaction.timeout.ms``); its commands are consumed
again from the committed offsets and decided again on the state of the last committed
snapshot: no event is lost or duplicated.  Any other failed transaction ends :meth:`run`
with an error (crash-only: restart it), except an abortable one (a rebalance that moved a
partition away mid-transaction): that transaction is aborted and the writer consumes again
from the committed offsets of the partitions it still owns.

Not thread-safe: one thread runs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from riverbed.errors import CommandRejected, EventSourcingError, WriterFencedError
from riverbed.eventsourcing.model import (
    Aggregate,
    AppTopics,
    Command,
    Event,
    Reply,
    Snapshot,
    State,
    partition_for,
)
from riverbed.eventsourcing.replay import load_partition, partition_count

log = logging.getLogger(__name__)

WRITER_DEFAULTS: Mapping[str, Any] = {
    "session.timeout.ms": 10_000,
    "transaction.timeout.ms": 30_000,
}


class CommandWriter:
    """Decides commands for the partitions the group assigns it (see module doc)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        topics: AppTopics,
        aggregate: Aggregate,
        *,
        writer_id: str,
        max_batch: int = 200,
        snapshot_every: int = 1,
    ) -> None:
        self.config = dict(config)
        self.topics = topics
        self.aggregate = aggregate
        self.writer_id = writer_id
        self.transactional_id = f"{topics.app}.writer.{writer_id}"
        self.max_batch = max_batch
        self._states: dict[int, dict[str, tuple[int, State]]] = {}
        self._events_from: dict[int, int] = {}  # events partition end at load
        self._snapshotted: dict[int, dict[str, int]] = {}  # version of the last snapshot
        self.snapshot_every = snapshot_every
        self.committed_batches = 0
        self._partitions = 0  # of the commands topic, read when run() starts

    def run(self, stop: threading.Event, *, on_ready: Any = None) -> None:
        """Consume and decide until ``stop`` is set.  Raises :class:`WriterFencedError`
        when a newer writer took this ``writer_id``."""
        from confluent_kafka import Consumer, KafkaException, Producer

        producer = Producer(
            {
                **self.config,
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": WRITER_DEFAULTS["transaction.timeout.ms"],
            }
        )
        try:
            producer.init_transactions(60)
        except KafkaException as exc:
            raise _fenced_or(exc, "cannot start the writer's transactions") from None
        consumer = Consumer(
            {
                **self.config,
                "group.id": f"{self.topics.app}.writers",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "session.timeout.ms": WRITER_DEFAULTS["session.timeout.ms"],
            }
        )

        def on_revoke(_consumer: Any, partitions: list[Any]) -> None:
            for tp in partitions:  # no transaction is open here: we poll only between them
                self._states.pop(tp.partition, None)
                self._snapshotted.pop(tp.partition, None)

        self._partitions = partition_count(self.config, self.topics.commands)
        consumer.subscribe([self.topics.commands], on_revoke=on_revoke, on_lost=on_revoke)
        if on_ready is not None:
            on_ready()
        try:
            while not stop.is_set():
                batch = consumer.consume(self.max_batch, 0.2)
                batch = [m for m in batch if m.error() is None]
                if batch:
                    self._commit_batch(producer, consumer, batch)
        finally:
            consumer.close()

    def _state_of(self, partition: int) -> dict[str, tuple[int, State]]:
        states = self._states.get(partition)
        if states is None:
            states, end = load_partition(self.config, self.topics, self.aggregate, partition)
            self._states[partition] = states
            self._events_from[partition] = end
            self._snapshotted[partition] = {a: v for a, (v, _s) in states.items()}
            log.info(
                "writer %s loaded %d aggregates of partition %d",
                self.writer_id,
                len(states),
                partition,
            )
        return states

    def _commit_batch(self, producer: Any, consumer: Any, batch: list[Any]) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        # load before the transaction: reading may wait on the previous owner's one
        for msg in batch:
            self._state_of(msg.partition())
        staged: dict[int, dict[str, tuple[int, State]]] = {}
        try:
            producer.begin_transaction()
            for msg in batch:
                self._decide(producer, msg, staged)
            snapshots: list[tuple[int, str, int]] = []
            for partition, changed in staged.items():
                done = self._snapshotted[partition]
                for aggregate_id, (version, state) in changed.items():
                    last = done.get(aggregate_id)
                    if last is not None and version - last < self.snapshot_every:
                        continue  # loaders replay its events after the last snapshot
                    snapshot = Snapshot(aggregate_id, version, state, self._events_from[partition])
                    producer.produce(
                        self.topics.snapshots,
                        key=aggregate_id.encode(),
                        value=snapshot.encode(),
                        partition=partition,
                    )
                    snapshots.append((partition, aggregate_id, version))
            ends: dict[int, int] = {}
            for msg in batch:
                ends[msg.partition()] = max(ends.get(msg.partition(), 0), msg.offset() + 1)
            producer.send_offsets_to_transaction(
                [TopicPartition(self.topics.commands, p, o) for p, o in ends.items()],
                consumer.consumer_group_metadata(),
                60,
            )
            producer.commit_transaction(60)
        except KafkaException as exc:
            self._states.clear()  # nothing staged is true: reload from the snapshots
            self._snapshotted.clear()
            error = exc.args[0] if exc.args else None
            if error is not None and getattr(error, "txn_requires_abort", lambda: False)():
                # e.g. a rebalance moved a partition away mid-transaction (the group
                # generation fenced our offsets): abort, and consume again from the
                # committed offsets of what we still own
                self._abort_and_rewind(producer, consumer, error)
                return
            raise _fenced_or(exc, "a writer transaction failed") from None
        for partition, changed in staged.items():
            self._states[partition].update(changed)
        for partition, aggregate_id, version in snapshots:
            self._snapshotted[partition][aggregate_id] = version
        self.committed_batches += 1

    def _abort_and_rewind(self, producer: Any, consumer: Any, error: Any) -> None:
        from confluent_kafka import KafkaException

        log.warning("writer %s aborts a transaction: %s", self.writer_id, error)
        try:
            producer.abort_transaction(60)
            assigned = consumer.assignment()
            if assigned:
                for tp in consumer.committed(assigned, timeout=60):
                    if tp.offset >= 0:
                        consumer.seek(tp)
                    else:  # nothing committed yet: from the beginning
                        tp.offset = -2  # OFFSET_BEGINNING
                        consumer.seek(tp)
        except KafkaException as exc:
            raise _fenced_or(exc, "a writer transaction could not be aborted") from None

    def _decide(
        self, producer: Any, msg: Any, staged: dict[int, dict[str, tuple[int, State]]]
    ) -> None:
        partition = msg.partition()
        try:
            command = Command.decode(msg.value())
        except EventSourcingError as exc:  # a poison record must not stop the partition
            log.warning("skipped %s[%d]@%d: %s", msg.topic(), partition, msg.offset(), exc)
            return
        changed = staged.setdefault(partition, {})
        version, state = changed.get(command.aggregate) or self._states[partition].get(
            command.aggregate, (0, self.aggregate.initial_state())
        )
        reply: Reply
        try:
            owner = partition_for(command.aggregate, self._partitions)
            if owner != partition:
                raise CommandRejected(
                    f"{command.aggregate}'s commands belong to partition {owner}, "
                    f"not {partition} (use riverbed.eventsourcing.partition_for)"
                )
            if command.expected_version is not None and command.expected_version != version:
                raise CommandRejected(
                    f"stale version: expected {command.expected_version}, "
                    f"{command.aggregate} is at {version}"
                )
            decision = self.aggregate.decide(command.aggregate, state, command)
        except CommandRejected as exc:
            reply = Reply(command.id, False, str(exc), version)
        else:
            for new in decision.events:
                version += 1
                event = Event(command.aggregate, version, new.type, dict(new.data), command.id)
                state = self.aggregate.evolve(state, event)
                producer.produce(
                    self.topics.events,
                    key=command.aggregate.encode(),
                    value=event.encode(),
                    partition=partition,
                )
            for other in decision.commands:
                producer.produce(
                    self.topics.commands,
                    key=other.aggregate.encode(),
                    value=other.encode(),
                    partition=partition_for(other.aggregate, self._partitions),
                )
            changed[command.aggregate] = (version, state)
            reply = Reply(command.id, True, None, version)
        if command.reply:
            producer.produce(
                self.topics.replies, key=command.id.encode(), value=reply.encode(), partition=0
            )


def _fenced_or(exc: Exception, what: str) -> EventSourcingError:
    from confluent_kafka import KafkaError

    error = exc.args[0] if exc.args else None
    if isinstance(error, KafkaError) and error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ):
        return WriterFencedError(f"writer fenced by a newer instance: {error.str()}")
    return EventSourcingError(f"{what}: {exc}")
