"""Scenarios driven by kafka-python 3.0.12: produce/consume, ListOffsets, out-of-range fetch.

Same signatures and return shapes as :mod:`.confluent`.  kafka-python opens with
ApiVersions v4 and enables idempotence by default (so it sends InitProducerId first).
It refuses null header values on send (client-side ``TypeError``), so records for it must
have none; snappy needs the ``python-snappy`` package.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from riverbed.testing.scenarios.records import ConsumedRecord, Record, RoundTrip

CLIENT_ID = "riverbed-compat-kafka-python"


def produce(
    bootstrap: str,
    topic: str,
    records: Sequence[Record],
    codec: str = "none",
    timeout_s: float = 30.0,
) -> list[tuple[int, int]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=CLIENT_ID,
        acks="all",
        linger_ms=5,
        compression_type=None if codec == "none" else codec,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=r.key,
                value=r.value,
                partition=r.partition,
                headers=list(r.headers),
                timestamp_ms=r.timestamp_ms,
            )
            for r in records
        ]
        producer.flush(timeout_s)
        metas = [f.get(timeout=timeout_s) for f in futures]
        return [(m.partition, m.offset) for m in metas]
    finally:
        producer.close(5)


def _consumer(bootstrap: str, **extra: Any) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id=CLIENT_ID,
        group_id=None,
        enable_auto_commit=False,
        **extra,
    )


def consume_all(
    bootstrap: str, topic: str, partitions: Sequence[int], timeout_s: float = 30.0
) -> tuple[ConsumedRecord, ...]:
    from kafka import TopicPartition

    consumer = _consumer(bootstrap, auto_offset_reset="earliest")
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        high = consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        out: list[ConsumedRecord] = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < high[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumed {len(out)} of {high}")
            for tp, msgs in consumer.poll(timeout_ms=500).items():
                out.extend(
                    ConsumedRecord(
                        tp.partition, m.offset, m.key, m.value, tuple(m.headers or ()), m.timestamp
                    )
                    for m in msgs
                )
        return tuple(sorted(out, key=lambda r: (r.partition, r.offset)))
    finally:
        consumer.close()


def roundtrip(bootstrap: str, topic: str, codec: str, records: Sequence[Record]) -> RoundTrip:
    delivered = produce(bootstrap, topic, records, codec)
    consumed = consume_all(bootstrap, topic, sorted({r.partition for r in records}))
    return RoundTrip(tuple(delivered), consumed)


def offsets_for_times(
    bootstrap: str, topic: str, partition: int, timestamps: Sequence[int]
) -> dict[int, int | None]:
    from kafka import TopicPartition

    consumer = _consumer(bootstrap)
    try:
        tp = TopicPartition(topic, partition)
        out: dict[int, int | None] = {}
        for ts in timestamps:
            found = consumer.offsets_for_times({tp: ts})[tp]
            out[ts] = None if found is None else found.offset
        return out
    finally:
        consumer.close()


def consume_out_of_range(bootstrap: str, topic: str, partition: int, offset: int) -> str:
    """Fetch at ``offset`` with no reset policy; Kafka's error name for what was raised."""
    from kafka import TopicPartition
    from kafka.errors import KafkaError

    consumer = _consumer(bootstrap, auto_offset_reset="none")
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                got = consumer.poll(timeout_ms=500)
            except KafkaError as exc:
                return _error_name(exc)
            if got:
                return "unexpected records"
        raise TimeoutError("no error raised")
    finally:
        consumer.close()


def _error_name(exc: Any) -> str:
    from riverbed.protocol.error_codes import ErrorCode

    errno = getattr(exc, "errno", None)
    if isinstance(errno, int):
        try:
            return ErrorCode(errno).name
        except ValueError:
            pass
    return type(exc).__name__
