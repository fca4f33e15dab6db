"""The batch marker of the exactly-once sink: "task P of batch N of query Q is committed".

Identity of a sink task (:class:`TaskIdentity`), read from Spark's ``TaskContext``:

* ``query_id`` -- local property ``sql.streaming.queryId``: the query's id, stored in the
  checkpoint's ``metadata`` file, so stable across restarts from that checkpoint;
* ``batch_id`` -- local property ``streaming.sql.batchId``: the micro-batch id; a batch
  replayed after a crash keeps its id (Spark re-runs the batch its offsets log names);
* ``partition`` -- the task's partition id within the batch's write stage.

Names derived from it (``prefix`` is the ``transactionalIdPrefix`` option)::

    transactional.id   {prefix}-{query_id}-{partition}
    marker group       {prefix}-{query_id}-{partition}     (a consumer group nobody joins)

The marker is a committed consumer-group offset, written by
``send_offsets_to_transaction`` *inside the task's transaction*, so it becomes visible
exactly when the task's records do (KIP-98/447: TxnOffsetCommit is materialised at the
commit marker, discarded on abort)::

    group     = marker group
    partition = (markerTopic, 0)                  an existing partition: Kafka refuses
                                                  offsets for unknown topics
    offset    = batch_id + 1                      "batches < offset are committed"
    metadata  = {"query":Q,"batch":N,"task":P,"records":R}   (JSON, <= 4 KiB)

Invariant: for one (query, partition) the marker only grows, since Spark runs batches in
order and only ever replays the last one.  A task of batch N whose marker offset is
``> N`` has nothing to do: its rows are already in the topic.

Stateless functions; the consumer passed in is owned by the caller (one per task).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from riverbed.errors import ConfigError

BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
MARKER_PARTITION = 0


@dataclass(frozen=True, slots=True)
class TaskIdentity:
    """Which query, micro-batch and task a sink task writes for."""

    query_id: str
    batch_id: int
    partition: int
    attempt: int = 0

    def transactional_id(self, prefix: str) -> str:
        return f"{prefix}-{self.query_id}-{self.partition}"

    def marker_group(self, prefix: str) -> str:
        return f"{prefix}-{self.query_id}-{self.partition}"


@dataclass(frozen=True, slots=True)
class BatchMarker:
    """A committed marker: every batch below ``next_batch_id`` was written by this task."""

    next_batch_id: int
    records: int | None

    def covers(self, batch_id: int) -> bool:
        return batch_id < self.next_batch_id


def current_task() -> TaskIdentity:
    """The identity of the running Spark task (call only inside a streaming write task)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise ConfigError("deliveryGuarantee=exactly_once must run inside a Spark task")
    batch = context.getLocalProperty(BATCH_ID_PROPERTY)
    query = context.getLocalProperty(QUERY_ID_PROPERTY)
    if batch is None or query is None:
        raise ConfigError(
            "deliveryGuarantee=exactly_once needs a streaming query (writeStream); "
            "Spark gave this task no micro-batch id"
        )
    return TaskIdentity(query, int(batch), context.partitionId(), context.attemptNumber())


def marker_offset(identity: TaskIdentity, marker_topic: str, records: int) -> KafkaTopicPartition:
    """The offset to commit in the task's transaction for batch ``identity.batch_id``."""
    metadata = json.dumps(
        {
            "query": identity.query_id,
            "batch": identity.batch_id,
            "task": identity.partition,
            "records": records,
        },
        separators=(",", ":"),
    )
    return KafkaTopicPartition(
        marker_topic, MARKER_PARTITION, identity.batch_id + 1, metadata=metadata
    )


def read_marker(consumer: Consumer, marker_topic: str, timeout_s: float) -> BatchMarker | None:
    """The committed marker of ``consumer``'s group, or None when the task never committed.

    ``consumer`` must have ``group.id`` = the marker group and
    ``isolation.level=read_committed``: librdkafka then sends OffsetFetch with
    ``RequireStable`` and waits out a transaction still completing.
    """
    (found,) = consumer.committed(
        [KafkaTopicPartition(marker_topic, MARKER_PARTITION)], timeout=timeout_s
    )
    if found.error is not None:
        raise ConfigError(f"cannot read the batch marker on {marker_topic}-0: {found.error}")
    if found.offset is None or found.offset < 0:
        return None
    records: int | None = None
    try:
        records = int(json.loads(found.metadata or "{}").get("records"))
    except (ValueError, TypeError, AttributeError):
        records = None
    return BatchMarker(next_batch_id=found.offset, records=records)
