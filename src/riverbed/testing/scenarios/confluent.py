"""Scenarios driven by confluent-kafka (librdkafka 2.16): produce/consume, ListOffsets, admin.

Each function takes ``bootstrap`` ("host:port") and returns plain data (see
:mod:`.records`); it raises on timeouts and returns Kafka error names (``"TOPIC_ALREADY_EXISTS"``)
for outcomes a scenario expects.  Clients are created and closed per call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from riverbed.testing.scenarios.records import ConsumedRecord, Record, RoundTrip

CLIENT_ID = "riverbed-compat-confluent"


def _common(bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "client.id": CLIENT_ID}


def error_name(err: Any) -> str:
    """A ``KafkaError`` as Kafka's error name (``name()`` is librdkafka's spelling)."""
    from riverbed.protocol.error_codes import ErrorCode

    code = int(err.code())
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(err.name())


def produce(
    bootstrap: str,
    topic: str,
    records: Sequence[Record],
    codec: str = "none",
    extra: Mapping[str, Any] | None = None,
    timeout_s: float = 30.0,
) -> list[tuple[int, int] | str]:
    """Produce ``records`` in order; per record the (partition, offset) or the error name."""
    from confluent_kafka import Producer

    conf = {**_common(bootstrap), "compression.type": codec, "linger.ms": 5, "acks": "all"}
    conf.update(extra or {})
    producer = Producer(conf)
    results: list[tuple[int, int] | str | None] = [None] * len(records)

    def on_delivery(index: int) -> Any:
        def report(err: Any, msg: Any) -> None:
            results[index] = error_name(err) if err else (msg.partition(), msg.offset())

        return report

    for i, rec in enumerate(records):
        kwargs: dict[str, Any] = {"partition": rec.partition, "on_delivery": on_delivery(i)}
        if rec.timestamp_ms is not None:
            kwargs["timestamp"] = rec.timestamp_ms
        producer.produce(topic, rec.value, rec.key, headers=list(rec.headers), **kwargs)
        producer.poll(0)
    remaining = producer.flush(timeout_s)
    if remaining:
        raise TimeoutError(f"{remaining} records undelivered after {timeout_s}s")
    return [r if r is not None else "NO_REPORT" for r in results]


def consume_all(
    bootstrap: str, topic: str, partitions: Sequence[int], timeout_s: float = 30.0
) -> tuple[ConsumedRecord, ...]:
    """Assign every partition at offset 0 and read up to the high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            **_common(bootstrap),
            "group.id": "riverbed-compat",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
        }
    )
    try:
        high = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        out: list[ConsumedRecord] = []
        position = dict.fromkeys(partitions, 0)
        deadline = time.monotonic() + timeout_s
        while any(position[p] < high[p] for p in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumed {position} of {high}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise RuntimeError(f"consume error: {msg.error()}")
            partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            headers: Any = msg.headers() or ()
            out.append(
                ConsumedRecord(
                    partition,
                    offset,
                    _opt_bytes(msg.key()),
                    _opt_bytes(msg.value()),
                    tuple((str(k), _opt_bytes(v)) for k, v in headers),
                    msg.timestamp()[1],
                )
            )
            position[partition] = offset + 1
        return tuple(sorted(out, key=lambda r: (r.partition, r.offset)))
    finally:
        consumer.close()


def _opt_bytes(data: Any) -> bytes | None:
    return None if data is None else bytes(data)


def roundtrip(bootstrap: str, topic: str, codec: str, records: Sequence[Record]) -> RoundTrip:
    """Produce ``records`` with ``codec``, then read the topic back by assign/seek."""
    delivered = produce(bootstrap, topic, records, codec)
    if any(isinstance(d, str) for d in delivered):
        raise RuntimeError(f"produce failed: {delivered}")
    partitions = sorted({r.partition for r in records})
    consumed = consume_all(bootstrap, topic, partitions)
    return RoundTrip(tuple(d for d in delivered if not isinstance(d, str)), consumed)


def offsets_for_times(
    bootstrap: str, topic: str, partition: int, timestamps: Sequence[int]
) -> dict[int, int | None]:
    """ListOffsets by timestamp: the earliest offset whose timestamp >= each query, or None."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**_common(bootstrap), "group.id": "riverbed-compat"})
    try:
        out: dict[int, int | None] = {}
        for ts in timestamps:
            [tp] = consumer.offsets_for_times([TopicPartition(topic, partition, ts)], 10)
            if tp.error:
                raise RuntimeError(f"offsets_for_times({ts}): {tp.error}")
            out[ts] = tp.offset if tp.offset >= 0 else None
        return out
    finally:
        consumer.close()


def consume_out_of_range(bootstrap: str, topic: str, partition: int, offset: int) -> str:
    """Fetch at ``offset`` with ``auto.offset.reset=error``; the error the consumer reports."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            **_common(bootstrap),
            "group.id": "riverbed-compat",
            "auto.offset.reset": "error",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error():
                # librdkafka wraps the broker's OFFSET_OUT_OF_RANGE as _AUTO_OFFSET_RESET
                text = str(msg.error())
                return "OFFSET_OUT_OF_RANGE" if "Offset out of range" in text else text
            if msg is not None:
                return f"unexpected record at {msg.offset()}"
        raise TimeoutError("no error reported")
    finally:
        consumer.close()


def list_offsets_specs(bootstrap: str, topic: str, partition: int) -> dict[str, Any]:
    """AdminClient.list_offsets with every special spec: {spec: (offset, timestamp) | error}.

    Specs: ``earliest`` (-2), ``latest`` (-1), ``max_timestamp`` (-3, KIP-734).  Kafka
    answers -3 with the first record carrying the partition's largest timestamp.
    """
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

    admin = AdminClient(_common(bootstrap))
    spec: Any = OffsetSpec  # untyped in confluent-kafka
    specs = {
        "earliest": spec.earliest(),
        "latest": spec.latest(),
        "max_timestamp": spec.max_timestamp(),
    }
    out: dict[str, Any] = {}
    for name, wanted in specs.items():
        tp = TopicPartition(topic, partition)
        [fut] = admin.list_offsets({tp: wanted}, request_timeout=10).values()
        try:
            info = fut.result(30)
        except KafkaException as exc:
            out[name] = error_name(exc.args[0])
            continue
        out[name] = (int(info.offset), int(info.timestamp))
    return out


def high_watermark(bootstrap: str, topic: str, partition: int = 0, timeout_s: float = 60) -> int:
    """The high watermark of ``topic``'s ``partition`` (a Consumer's watermark query)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**_common(bootstrap), "group.id": "watermarks"})
    try:
        _low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=timeout_s
        )
        return int(high)
    finally:
        consumer.close()
