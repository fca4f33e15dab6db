"""The task side of the exactly-once sink: one Kafka transaction per (micro-batch, task).

``deliveryGuarantee=exactly_once`` (see :mod:`riverbed.spark.options`).  In each Spark
task of micro-batch N, :func:`write_transactionally`:

1. reads its :class:`~riverbed.spark.transactional_marker.TaskIdentity` (query id, batch
   id, partition) from Spark's ``TaskContext``; a task with no rows stops here;
2. opens a producer with ``transactional.id = {prefix}-{query}-{partition}`` and calls
   ``init_transactions``: this *fences* every earlier holder of the id (a previous
   attempt of the task, a task of the crashed driver's run still alive) and makes the
   coordinator abort whatever transaction that holder left open;
3. reads the task's batch marker (a committed offset of the group
   ``{prefix}-{query}-{partition}``, read_committed); if it covers N, the rows of this
   task of batch N are already committed -- a replay -- and it returns without writing;
4. otherwise begins a transaction, produces every row, flushes, adds the marker
   ``batch N + 1`` with ``send_offsets_to_transaction`` and commits.

Records and marker commit or abort together, so for a read_committed reader a task's
rows of a batch appear once: either the commit happened (and every later attempt finds
the marker) or it did not (and the coordinator aborts the leftovers when the next attempt
fences them).  What this relies on is in docs/spark.md ("Exactly-once").

A crash at any point leaves an open transaction at worst, aborted by the next
``init_transactions`` of the same id or after ``transaction.timeout.ms`` -- until then it
holds back the last stable offset of the partitions it wrote (read_committed readers wait).

Runs inside one Spark task; one producer and one consumer per call, closed on return.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

import pyarrow as pa  # type: ignore[import-untyped]
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from riverbed.errors import ConfigError
from riverbed.spark.options import SinkOptions
from riverbed.spark.sink import FLUSH_TIMEOUT_S, new_producer, produce_rows
from riverbed.spark.transactional_failpoints import armed, failpoint
from riverbed.spark.transactional_marker import (
    TaskIdentity,
    current_task,
    marker_offset,
    read_marker,
)

TRANSACTION_CALL_TIMEOUT_S = 120.0
"""Longest one transactional call (init, send offsets, commit, abort) may block."""


@dataclass(frozen=True, slots=True)
class TransactionalWrite:
    """What one task did: ``records`` written, or found already committed (``replayed``)."""

    records: int
    replayed: bool


def _first_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch] | None:
    """``batches`` from its first non-empty batch on, or None when there is no row."""
    for batch in batches:
        if batch.num_rows:
            return itertools.chain([batch], batches)
    return None


def marker_consumer(options: SinkOptions, identity: TaskIdentity) -> Consumer:
    """A consumer used only to read the marker and to name the group in the transaction."""
    config: dict[str, object] = {
        **options.kafka_config(),
        "group.id": identity.marker_group(options.transactional_id_prefix),
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
    }
    try:
        return Consumer(config)
    except (KafkaException, ValueError, TypeError) as exc:
        raise ConfigError(f"invalid kafka.* option: {exc}") from None


def write_transactionally(
    options: SinkOptions, batches: Iterator[pa.RecordBatch]
) -> TransactionalWrite:
    """Write this task's rows of this micro-batch exactly once (see the module docstring)."""
    identity = current_task()
    rows = _first_rows(batches)
    if rows is None:
        return TransactionalWrite(0, replayed=False)
    marker_topic = cast(str, options.marker_topic)
    where = {"batch_id": identity.batch_id, "partition": identity.partition}
    failpoint("task.before_init", **where)
    producer = new_producer(
        {
            "acks": "all",
            "linger.ms": 5,
            **options.kafka_config(),
            "transactional.id": identity.transactional_id(options.transactional_id_prefix),
        }
    )
    producer.init_transactions(TRANSACTION_CALL_TIMEOUT_S)
    consumer = marker_consumer(options, identity)
    try:
        marker = read_marker(consumer, marker_topic, TRANSACTION_CALL_TIMEOUT_S)
        failpoint("task.after_marker_read", **where)
        if marker is not None and marker.covers(identity.batch_id):
            same = marker.next_batch_id == identity.batch_id + 1
            return TransactionalWrite(marker.records or 0 if same else 0, replayed=True)
        producer.begin_transaction()
        try:
            count = _produce_and_commit(producer, consumer, options, identity, rows)
        except KafkaException as exc:
            _abort_if_possible(producer, exc)
            raise
        failpoint("task.after_commit", **where)
        return TransactionalWrite(count, replayed=False)
    finally:
        consumer.close()


def _produce_and_commit(
    producer: Producer,
    consumer: Consumer,
    options: SinkOptions,
    identity: TaskIdentity,
    rows: Iterator[pa.RecordBatch],
) -> int:
    where = {"batch_id": identity.batch_id, "partition": identity.partition}
    mid_produce = armed("task.mid_produce")

    def after_batch(count: int) -> None:
        if mid_produce:
            producer.flush(FLUSH_TIMEOUT_S)
            failpoint("task.mid_produce", **where)

    errors: list[str] = []
    count = produce_rows(producer, options, rows, errors, after_batch=after_batch)
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    if errors:
        raise KafkaException(KafkaError(KafkaError._FAIL, f"delivery failed: {'; '.join(errors)}"))
    if remaining:
        raise KafkaException(
            KafkaError(
                KafkaError._TIMED_OUT,
                f"{remaining} records not delivered within {FLUSH_TIMEOUT_S:g} s",
            )
        )
    failpoint("task.before_send_offsets", **where)
    producer.send_offsets_to_transaction(
        [marker_offset(identity, cast(str, options.marker_topic), count)],
        consumer.consumer_group_metadata(),
        TRANSACTION_CALL_TIMEOUT_S,
    )
    failpoint("task.before_commit", **where)
    producer.commit_transaction(TRANSACTION_CALL_TIMEOUT_S)
    return count


def _abort_if_possible(producer: Producer, exc: KafkaException) -> None:
    """Abort after an abortable error; a fenced or fatal producer just goes away (the next
    holder of the transactional id, or the transaction timeout, aborts for it)."""
    error = exc.args[0] if exc.args else None
    if isinstance(error, KafkaError) and error.fatal():
        return
    with contextlib.suppress(KafkaException):
        producer.abort_transaction(TRANSACTION_CALL_TIMEOUT_S)
