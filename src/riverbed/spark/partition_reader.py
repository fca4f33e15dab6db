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

Runs inside a Spark task: one consumer per call, closed on return or on error.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping

import pyarrow as pa  # type: ignore[import-untyped]
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


def consumer_config(kafka_config: Mapping[str, str]) -> dict[str, str | bool]:
    """A consumer config for ``assign``-only reads: the user's kafka.* plus what we own."""
    config: dict[str, str | bool] = {
        "group.id": f"riverbed-spark-{uuid.uuid4()}",
        "isolation.level": "read_uncommitted",
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
    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.schema = arrow_schema(include_headers)
        self.clear()

    def clear(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int | None] = []
        self.timestamp_types: list[int] = []
        self.headers: list[list[dict[str, object]] | None] = []

    def add(self, message: Message, offset: int) -> None:
        self.keys.append(message.key())
        self.values.append(message.value())
        self.offsets.append(offset)
        kind, ts = message.timestamp()
        self.timestamps.append(ts * 1000 if kind else None)
        self.timestamp_types.append(_TIMESTAMP_TYPE.get(kind, -1))
        if self.include_headers:
            raw = message.headers()
            pairs = raw.items() if isinstance(raw, dict) else raw
            self.headers.append([{"key": k, "value": v} for k, v in pairs] if pairs else None)

    def batch(self, topic: str, partition: int) -> pa.RecordBatch:
        n = len(self.offsets)
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.timestamp("us", tz="UTC")),
            pa.array(self.timestamp_types, pa.int32()),
        ]
        if self.include_headers:
            arrays.append(pa.array(self.headers, self.schema.field("headers").type))
        self.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


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
            messages = consumer.consume(num_messages=min(batch_rows, until - position), timeout=0.2)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() in _DATA_LOSS:
                        position = _on_data_loss(
                            consumer, offset_range, position, fail_on_data_loss, poll_timeout_ms
                        )
                        break
                    raise KafkaException(error)
                offset = message.offset()
                if offset is None:
                    continue
                if offset >= until:
                    position = until
                    break
                columns.add(message, offset)
                position = offset + 1
            if messages:
                deadline = time.monotonic() + poll_timeout_ms / 1000
            else:
                # Only control records or compacted-away offsets may remain.
                (current,) = consumer.position([KafkaTopicPartition(topic, partition)])
                if current.offset is not None and current.offset >= until:
                    position = until
                elif time.monotonic() > deadline:
                    raise TimeoutError(
                        f"no progress reading {topic}-{partition} at offset {position} "
                        f"(until {until}) for kafkaConsumer.pollTimeoutMs={poll_timeout_ms}"
                        + _read_committed_hint(kafka_config)
                    )
            if len(columns.offsets) >= batch_rows:
                yield columns.batch(topic, partition)
        if columns.offsets:
            yield columns.batch(topic, partition)
    finally:
        consumer.close()


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
