"""The ``riverbed`` sink: write rows to Kafka topics, at-least-once or exactly-once.

Input columns (as Spark's Kafka sink): ``value`` (binary or string, required), ``key``
(binary or string), ``topic`` (string; the ``topic`` option overrides it), ``partition``
(int; otherwise the producer's partitioner decides), ``headers``
(array<struct<key:string,value:binary>>).  Other columns are refused.

``deliveryGuarantee=at_least_once`` (the default).  Each Spark task produces its rows
with an idempotent producer (``enable.idempotence=true``, ``acks=all``) and flushes before it
reports success; a delivery error fails the task.  The idempotent producer removes
duplicates from the producer's own retries, but when Spark re-runs a task or replays a
micro-batch after a crash, the rows are produced again: downstream readers may see
duplicates.  Producers are kept between tasks of one Python worker (as Spark's Kafka sink
caches its producers), see :class:`_ProducerPool`: a fresh idempotent producer's first
delivery waited up to ~0.5 s for its producer id (librdkafka moves from the bootstrap
connection to the broker's own id first), a kept one's 1.5 ms (measured on loopback).

``deliveryGuarantee=exactly_once`` (streaming only): each task writes its rows and a batch
marker in one Kafka transaction, and a replayed task that finds its marker writes nothing
(:mod:`riverbed.spark.transactional_sink`); read_committed readers see every row once.
The driver-side ``commit`` has nothing to do in either mode (it only hosts two failure
points, :mod:`riverbed.spark.transactional_failpoints`).

Thread-safety: a producer serves one task at a time; the pool is locked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
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
from riverbed.spark.offset_lookup import CLIENT_LOG
from riverbed.spark.options import SinkOptions
from riverbed.spark.schema import HEADERS_TYPE
from riverbed.spark.transactional_failpoints import failpoint

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
    """What one task reports: how many records it delivered, or (exactly-once) found
    already committed by an earlier run of the same batch (``replayed``)."""

    records: int
    replayed: bool = False


def _bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)  # type: ignore[call-overload,no-any-return]


def new_producer(config: Mapping[str, object]) -> Producer:
    """A confluent-kafka producer logging to :data:`CLIENT_LOG`, a bad ``kafka.*`` option
    raised as :class:`ConfigError`."""
    try:
        return Producer({**config, "logger": CLIENT_LOG})
    except (KafkaException, ValueError, TypeError) as exc:
        raise ConfigError(f"invalid kafka.* option: {exc}") from None


def produce_rows(
    producer: Producer,
    options: SinkOptions,
    batches: Iterable[pa.RecordBatch],
    errors: list[str],
    *,
    after_batch: Callable[[int], None] | None = None,
) -> int:
    """Hand every row of ``batches`` to ``producer`` (no flush); returns the row count.

    Delivery errors reported by ``poll`` are appended to ``errors`` (at most 5) and stop
    the loop after the current Arrow batch; ``after_batch(count)`` runs after each batch.
    """

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
        if after_batch is not None:
            after_batch(count)
    return count


PRODUCER_IDLE_S = 60.0
"""A kept producer unused this long is closed (its sockets and threads released)."""
IDLE_PRODUCERS_PER_CONFIG = 2


class _ProducerPool:
    """Idle at-least-once producers of this process, by configuration.

    :meth:`take` hands out an idle producer of the same configuration or a new one;
    :meth:`give_back` keeps it for the next task -- callers give back only a producer
    whose every record was delivered (flush returned 0, no delivery error), so a kept
    producer holds no queued records and no failed state; any other is dropped
    (librdkafka releases it when the last reference goes).  At most
    :data:`IDLE_PRODUCERS_PER_CONFIG` idle per configuration; a daemon thread closes
    those idle for :data:`PRODUCER_IDLE_S` and ends when none is left.  In Spark each
    Python worker process has its own pool (tasks run one at a time in a worker);
    without worker reuse (``spark.python.worker.reuse=false``) nothing is ever reused.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[tuple[str, str], ...], list[tuple[float, Producer]]] = {}
        self._reaper: threading.Thread | None = None

    @staticmethod
    def _key(config: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, str(v)) for k, v in config.items()))

    def take(self, config: Mapping[str, object]) -> Producer:
        with self._lock:
            idle = self._idle.get(self._key(config))
            if idle:
                return idle.pop()[1]
        return new_producer(config)

    def give_back(self, config: Mapping[str, object], producer: Producer) -> None:
        with self._lock:
            idle = self._idle.setdefault(self._key(config), [])
            if len(idle) >= IDLE_PRODUCERS_PER_CONFIG:
                return
            idle.append((time.monotonic(), producer))
            if self._reaper is None:
                self._reaper = threading.Thread(
                    target=self._reap, name="riverbed-sink-producer-reaper", daemon=True
                )
                self._reaper.start()

    def _reap(self) -> None:
        while True:
            time.sleep(PRODUCER_IDLE_S / 4)
            expired: list[Producer] = []
            with self._lock:
                cutoff = time.monotonic() - PRODUCER_IDLE_S
                for key in list(self._idle):
                    kept = [(t, p) for t, p in self._idle[key] if t > cutoff]
                    expired += [p for t, p in self._idle[key] if t <= cutoff]
                    if kept:
                        self._idle[key] = kept
                    else:
                        del self._idle[key]
                if not self._idle:
                    self._reaper = None
                done = self._reaper is None
            for producer in expired:
                producer.close()
            if done:
                return


PRODUCERS = _ProducerPool()


def produce_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Produce every row of ``batches`` and flush; returns the count, raises on any failure.

    The producer comes from :data:`PRODUCERS` and goes back there only when every row
    was delivered."""
    config = {"enable.idempotence": True, "acks": "all", "linger.ms": 5, **options.kafka_config()}
    producer = PRODUCERS.take(config)
    errors: list[str] = []
    count = produce_rows(producer, options, batches, errors)
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    if errors:
        raise KafkaException(f"delivery failed: {'; '.join(errors)}")
    if remaining:
        raise TimeoutError(f"{remaining} records not delivered within {FLUSH_TIMEOUT_S:g} s")
    PRODUCERS.give_back(config, producer)
    return count


class RiverbedBatchWriter(DataSourceArrowWriter):
    """``df.write.format("riverbed")``: at-least-once only (a batch write has no batch id)."""

    def __init__(self, options: SinkOptions) -> None:
        if options.delivery_guarantee == "exactly_once":
            raise ConfigError(
                "deliveryGuarantee=exactly_once is for writeStream only: a batch write has "
                "no micro-batch id to make a replay recognisable"
            )
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return ProducedMessage(produce_batches(self._options, iterator))


class RiverbedStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("riverbed")``: at-least-once, or exactly-once with
    ``deliveryGuarantee=exactly_once`` (see the module docstring)."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self._options.delivery_guarantee == "exactly_once":
            from riverbed.spark.transactional_sink import write_transactionally

            done = write_transactionally(self._options, iterator)
            return ProducedMessage(done.records, replayed=done.replayed)
        return ProducedMessage(produce_batches(self._options, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task already flushed (or committed its transaction); nothing is left to
        publish.  Runs on the driver, before Spark writes its commit log for ``batchId``."""
        failpoint("driver.before_batch_commit", batch_id=batchId)
        failpoint("driver.after_batch_commit", batch_id=batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: at-least-once rows stay in the topic; exactly-once tasks that
        committed keep their marker, so the replay of ``batchId`` skips them."""
