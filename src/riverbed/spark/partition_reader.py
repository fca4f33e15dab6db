"""Executor-side reading of one offset range into Arrow record batches.

Spark's *partition reader* role (one input partition, in a task).  It reads with a Kafka
consumer; the broker's Fetch API handler is :mod:`riverbed.broker.handlers.fetch`.

:func:`read_offset_range` opens a confluent-kafka ``Consumer`` (no group membership, no
offset commits: ``assign`` only), reads ``[from_offset, until_offset)`` of one partition
and yields ``pyarrow.RecordBatch`` es of at most ``batch_rows`` rows in the
:func:`~riverbed.spark.schema.arrow_schema` layout.

Gaps (compacted topics, transaction markers) are fine: the read ends once the consumer's
position reaches ``until_offset``.  With ``kafka.isolation.level=read_committed`` the
consumer drops records of aborted transactions and control records (librdkafka, from the
Fetch response's aborted transactions), and the planner ends every range at or below the
last stable offset (:mod:`riverbed.spark.offset_lookup`), so a task never waits on an
open transaction; a range whose tail is aborted records still ends at once, since the
consumer's position moves past them.  Records missing at the *start* of the range (deleted by
retention) are data loss, judged by :func:`~riverbed.spark.data_loss.handle_data_loss`: with
``failOnDataLoss`` the task fails naming the partition and offsets; without it the read
skips ahead to the log start offset.  A broker that makes no
progress for ``poll_timeout_ms`` fails the task (Spark retries it).

Runs inside a Spark task: one consumer per call, closed on return or on error.  (Keeping
consumers across tasks was measured slower on loopback: a reused consumer's next read
waits behind the fetch left in flight by its previous one; see docs/spark.md.)

Columns are built a batch at a time from the consumer's bulk ``consume`` results (see
:class:`_Columns`), without per-row Python objects beyond librdkafka's ``Message`` es.
Consuming and building run with Python's cyclic garbage collector paused (it is back on
while the reader is suspended at a ``yield``; see :func:`_cyclic_gc_paused`), and the
consumer's prefetch does not idle once its queue is full (:data:`BULK_READ_DEFAULTS`).
"""

from __future__ import annotations

import bisect
import gc
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import cast

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from riverbed.errors import ConfigError
from riverbed.spark.data_loss import deleted_records_message, handle_data_loss
from riverbed.spark.planning import OffsetRange
from riverbed.spark.schema import arrow_schema

DEFAULT_BATCH_ROWS = 10_000
_DATA_LOSS = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
# librdkafka timestamp types -> Kafka's TimestampType ids (what Spark shows).
_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}
_TIMESTAMP = pa.timestamp("us", tz="UTC")


# Bulk-read defaults, each overridable with the same kafka.* option.  librdkafka stops
# fetching a partition whose local queue holds more than queued.min.messages (100,000) and
# then waits fetch.queue.backoff.ms (1000 by default) before it looks again: a task reading
# a range of more than ~100k records sat idle for a second or more while its queue drained
# (measured: 125,000 records in 0.6-1.4 s with the default, 0.3-0.6 s with 10 ms, the same
# CPU; the queue stays bounded by queued.max.messages.kbytes either way).
BULK_READ_DEFAULTS: dict[str, str] = {"fetch.queue.backoff.ms": "10"}

CONSUME_WAIT_S = 0.01
"""How long the ``consume`` call that asks for the *rest* of the range waits for it.

librdkafka's ``consume(n, timeout)`` returns only once it has ``n`` messages or the
timeout has passed.  A range whose last offsets hold no record the application sees (a
transaction's commit marker, compacted-away offsets) can never fill that request, so the
call waits the whole timeout: with 0.2 s, a one-record read ending in a commit marker
took 0.4 s (measured; 0.2 s for the short answer, 0.2 s more for an empty one), added to
every micro-batch over a transactional topic.  With a short wait for that last call and
a position check after every short answer it takes 12-14 ms.  Calls that cannot end the
range wait :data:`BULK_WAIT_S`: with 10 ms there too, a bulk read of 250,000 records
cost ~10 % more CPU (more, smaller answers)."""

BULK_WAIT_S = 0.2
"""How long a ``consume`` call asking for a full batch (more remains after it) waits."""


def consumer_config(kafka_config: Mapping[str, str]) -> dict[str, str | bool]:
    """A consumer config for ``assign``-only reads: :data:`BULK_READ_DEFAULTS`, the user's
    kafka.* (which override them), plus what we own."""
    config: dict[str, str | bool] = {
        "group.id": f"riverbed-spark-{uuid.uuid4()}",
        "isolation.level": "read_uncommitted",
        **BULK_READ_DEFAULTS,
        **kafka_config,
    }
    config.update(
        {
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
            "enable.partition.eof": False,
        }
    )
    return config


class _Columns:
    """Messages of one partition waiting to become one Arrow batch.

    Columns are built a batch at a time from the buffered ``Message`` objects (list
    comprehensions and Arrow constructors, no per-row Python dicts or Rows): the topic and
    partition columns are repeated scalars; timestamps are scaled ms -> us in Arrow;
    ``timestampType`` is a repeated scalar when every record has the same kind (the usual
    case).  Headers, when asked for, are converted per record (they are lists by nature).
    """

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.schema = arrow_schema(include_headers)
        self.messages: list[Message] = []

    def extend(self, messages: list[Message]) -> None:
        self.messages.extend(messages)

    def __len__(self) -> int:
        return len(self.messages)

    def batch(self, topic: str, partition: int, limit: int) -> pa.RecordBatch:
        """The first ``limit`` buffered records as one batch (removed from the buffer)."""
        messages, self.messages = self.messages[:limit], self.messages[limit:]
        n = len(messages)
        pairs = [m.timestamp() for m in messages]
        kinds = [k for k, _ in pairs]
        stamps = [t for _, t in pairs]
        if kinds.count(kinds[0]) == n:
            kind = kinds[0]
            timestamp_types = pa.repeat(pa.scalar(_TIMESTAMP_TYPE.get(kind, -1), pa.int32()), n)
            timestamps = (
                pc.multiply(pa.array(stamps, pa.int64()), 1000) if kind else pa.nulls(n, pa.int64())
            )
        else:
            timestamp_types = pa.array([_TIMESTAMP_TYPE.get(k, -1) for k in kinds], pa.int32())
            timestamps = pc.multiply(
                pa.array(
                    [t if k else None for k, t in zip(kinds, stamps, strict=True)], pa.int64()
                ),
                1000,
            )
        arrays = [
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() for m in messages], pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array([m.offset() for m in messages], pa.int64()),
            timestamps.cast(_TIMESTAMP),
            timestamp_types,
        ]
        if self.include_headers:
            arrays.append(
                pa.array([_headers(m) for m in messages], self.schema.field("headers").type)
            )
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _headers(message: Message) -> list[dict[str, object]] | None:
    raw = message.headers()
    pairs = raw.items() if isinstance(raw, dict) else raw
    return [{"key": k, "value": v} for k, v in pairs] if pairs else None


def read_offset_range(
    kafka_config: Mapping[str, str],
    offset_range: OffsetRange,
    *,
    include_headers: bool,
    fail_on_data_loss: bool,
    poll_timeout_ms: int,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``offset_range`` as Arrow batches (see the module docstring)."""
    topic, partition = offset_range.topic, offset_range.partition
    until = offset_range.until_offset
    try:
        consumer = Consumer(consumer_config(kafka_config))
    except (KafkaException, ValueError, TypeError) as exc:
        raise ConfigError(f"invalid kafka.* option: {exc}") from None
    columns = _Columns(include_headers)
    try:
        position = offset_range.from_offset
        consumer.assign([KafkaTopicPartition(topic, partition, position)])
        deadline = time.monotonic() + poll_timeout_ms / 1000
        while position < until:
            with _cyclic_gc_paused():
                asked = min(batch_rows, until - position)
                # the call that may end the range waits briefly (CONSUME_WAIT_S)
                wait = CONSUME_WAIT_S if asked == until - position else BULK_WAIT_S
                messages = consumer.consume(num_messages=asked, timeout=wait)
                if messages:
                    accepted, position, error = _accept(messages, until, position)
                    columns.extend(accepted)
                    if error is not None:
                        if error.code() not in _DATA_LOSS:
                            raise KafkaException(error)
                        position = _on_data_loss(
                            consumer, offset_range, position, fail_on_data_loss, poll_timeout_ms
                        )
                    deadline = time.monotonic() + poll_timeout_ms / 1000
                if position < until and len(messages) < asked:
                    # A short answer: the rest may be only control records (transaction
                    # markers) or compacted-away offsets, which the consumer skips,
                    # moving its position past them.
                    (current,) = consumer.position([KafkaTopicPartition(topic, partition)])
                    if current.offset is not None and current.offset >= until:
                        position = until
                    elif not messages and time.monotonic() > deadline:
                        raise TimeoutError(
                            f"no progress reading {topic}-{partition} at offset {position} "
                            f"(until {until}) for kafkaConsumer.pollTimeoutMs={poll_timeout_ms}"
                            + _read_committed_hint(kafka_config)
                        )
                ready = [
                    columns.batch(topic, partition, batch_rows)
                    for _ in range(len(columns) // batch_rows)
                ]
            yield from ready
        if len(columns):
            with _cyclic_gc_paused():
                last = columns.batch(topic, partition, batch_rows)
            yield last
    finally:
        consumer.close()


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (as it was before, after it).

    Each consumed ``Message`` is a GC-tracked object, and the collector, triggered every
    few hundred allocations, walks the thousands of them alive in the buffer again and
    again: measured, the first ``timestamp()`` of each of 100,000 fresh messages cost
    2.4-6.3 us with the collector on and 0.4 us with it off -- the largest per-row cost
    of a read.  Reference counting still frees everything at once; nothing here makes
    cycles.  The collector is back on whenever the reader yields (Spark's worker code runs
    with the process's usual setting).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _accept(
    messages: list[Message], until: int, position: int
) -> tuple[list[Message], int, KafkaError | None]:
    """The leading records of ``messages`` to keep, the position after them, and the error
    that stopped them (if an error message did).

    Keeps records up to the first error message or the first offset at/after ``until``
    (the position then becomes ``until``); offsets increase within a partition.
    """
    # Booleans, not the errors: KafkaError == None raises inside list.count/index.
    failed = [m.error() is not None for m in messages]
    error = None
    if True in failed:
        cut = failed.index(True)
        error = messages[cut].error()
        messages = messages[:cut]
    found = [m.offset() for m in messages]
    if None in found:  # not seen on a record; skipped like the per-message loop did
        messages = [m for m, o in zip(messages, found, strict=True) if o is not None]
    offsets = [o for o in found if o is not None] if None in found else cast(list[int], found)
    if not offsets:
        return [], position, error
    end = bisect.bisect_left(offsets, until)
    if end < len(offsets):
        return messages[:end], until, None
    return messages, offsets[-1] + 1, error


def _read_committed_hint(kafka_config: Mapping[str, str]) -> str:
    if kafka_config.get("isolation.level", "").strip().lower() != "read_committed":
        return ""
    return (
        "; under read_committed an open transaction holds the last stable offset below "
        "the range's end (a range planned under read_uncommitted, e.g. from an older "
        "checkpoint, can end past it)"
    )


def _on_data_loss(
    consumer: Consumer,
    offset_range: OffsetRange,
    position: int,
    fail_on_data_loss: bool,
    poll_timeout_ms: int,
) -> int:
    """Handle an out-of-range fetch at ``position``; returns where to read next."""
    ktp = KafkaTopicPartition(offset_range.topic, offset_range.partition)
    low, high = consumer.get_watermark_offsets(ktp, timeout=poll_timeout_ms / 1000)
    handle_data_loss(
        deleted_records_message(offset_range.topic, offset_range.partition, position, low, high),
        fail_on_data_loss=fail_on_data_loss,
    )
    target = max(position, low)
    if target >= offset_range.until_offset or target >= high:
        return offset_range.until_offset
    consumer.assign([KafkaTopicPartition(offset_range.topic, offset_range.partition, target)])
    return target
