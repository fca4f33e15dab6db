"""The ``riverbed`` sink: write rows to Kafka topics with an idempotent producer.

Input columns (as Spark's Kafka sink): ``value`` (binary or string, required), ``key``
(binary or string), ``topic`` (string; the ``topic`` option overrides it), ``partition``
(int; otherwise the producer's partitioner decides), ``headers``
(array<struct<key:string,value:binary>>).  Other columns are refused.

Delivery guarantee: **at-least-once**.  Each Spark task produces its rows with an
idempotent producer (``enable.idempotence=true``, ``acks=all``) and flushes before it
reports success; a delivery error fails the task.  The idempotent producer removes
duplicates from the producer's own retries, but when Spark re-runs a task or replays a
micro-batch after a crash, the rows are produced again: downstream readers may see
duplicates.  Exactly-once output needs an idempotent consumer of the topic, or Kafka
transactions, which this sink does not use.

Thread-safety: one producer per task; nothing is shared between tasks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from confluent_kafka import KafkaException, Producer
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from riverbed.errors import ConfigError
from riverbed.spark.options import SinkOptions
from riverbed.spark.schema import HEADERS_TYPE

_ALLOWED: dict[str, tuple[DataType, ...]] = {
    "key": (BinaryType(), StringType()),
    "value": (BinaryType(), StringType()),
    "topic": (StringType(),),
    "partition": (IntegerType(),),
    "headers": (HEADERS_TYPE,),
}
FLUSH_TIMEOUT_S = 120.0


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Refuse a DataFrame the sink cannot write, naming the column."""
    names = {f.name.lower(): f for f in schema.fields}
    for name, field in names.items():
        allowed = _ALLOWED.get(name)
        if allowed is None:
            raise ConfigError(
                f"column {field.name!r} cannot be written to Kafka (allowed: {', '.join(_ALLOWED)})"
            )
        if field.dataType not in allowed:
            raise ConfigError(
                f"column {field.name!r} has type {field.dataType.simpleString()}; expected "
                + " or ".join(t.simpleString() for t in allowed)
            )
    if "value" not in names:
        raise ConfigError("a 'value' column is required to write to Kafka")
    if "topic" not in names and options.topic is None:
        raise ConfigError("set the 'topic' option or provide a 'topic' column")


@dataclass(frozen=True, slots=True)
class ProducedMessage(WriterCommitMessage):
    """What one task reports: how many records it delivered."""

    records: int


def _bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)  # type: ignore[call-overload,no-any-return]


def produce_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Produce every row of ``batches`` and flush; returns the count, raises on any failure."""
    config: dict[str, object] = {
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        **options.kafka_config(),
    }
    try:
        producer = Producer(config)
    except (KafkaException, ValueError, TypeError) as exc:
        raise ConfigError(f"invalid kafka.* option: {exc}") from None
    errors: list[str] = []

    def on_delivery(error: object, message: object) -> None:
        if error is not None and len(errors) < 5:
            errors.append(str(error))

    count = 0
    for batch in batches:
        columns: Mapping[str, list[Any]] = {
            name.lower(): batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)
        }
        n = batch.num_rows
        for i in range(n):
            topic = options.topic or columns["topic"][i]
            if topic is None:
                raise ConfigError("row with a null topic and no 'topic' option")
            value = _bytes(columns["value"][i])
            key = _bytes(columns["key"][i]) if "key" in columns else None
            partition = columns["partition"][i] if "partition" in columns else None
            raw_headers = columns["headers"][i] if "headers" in columns else None
            headers = [(h["key"], h["value"]) for h in raw_headers] if raw_headers else None
            while True:
                try:
                    producer.produce(
                        topic,
                        value=value,
                        key=key,
                        partition=-1 if partition is None else partition,
                        on_delivery=on_delivery,
                        headers=headers,
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            count += 1
        if errors:
            break
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    if errors:
        raise KafkaException(f"delivery failed: {'; '.join(errors)}")
    if remaining:
        raise TimeoutError(f"{remaining} records not delivered within {FLUSH_TIMEOUT_S:g} s")
    return count


class RiverbedBatchWriter(DataSourceArrowWriter):
    """``df.write.format("riverbed")``."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return ProducedMessage(produce_batches(self._options, iterator))


class RiverbedStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("riverbed")``: at-least-once (see the module docstring)."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return ProducedMessage(produce_batches(self._options, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task already flushed its records; nothing is left to publish."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records of successful tasks stay in the topic (at-least-once); nothing to undo."""
