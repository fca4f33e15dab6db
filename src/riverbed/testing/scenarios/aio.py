"""Scenarios driven by aiokafka 0.14: produce/consume and ListOffsets.

Same signatures and return shapes as :mod:`.confluent`; each function runs its own event
loop (``asyncio.run``), so call it from synchronous test code, not from a running loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from riverbed.testing.scenarios.records import ConsumedRecord, Record, RoundTrip

CLIENT_ID = "riverbed-compat-aiokafka"


async def _produce(
    bootstrap: str, topic: str, records: Sequence[Record], codec: str
) -> list[tuple[int, int]]:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=CLIENT_ID,
        acks="all",
        linger_ms=5,
        compression_type=None if codec == "none" else codec,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                value=r.value,
                key=r.key,
                partition=r.partition,
                timestamp_ms=r.timestamp_ms,
                headers=list(r.headers),
            )
            for r in records
        ]
        metas = await asyncio.gather(*futures)
        return [(m.partition, m.offset) for m in metas]
    finally:
        await producer.stop()


async def _consume_all(
    bootstrap: str, topic: str, partitions: Sequence[int], timeout_s: float
) -> tuple[ConsumedRecord, ...]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id=CLIENT_ID,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        high = await consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        out: list[ConsumedRecord] = []
        position = dict.fromkeys(tps, 0)
        deadline = time.monotonic() + timeout_s
        while any(position[tp] < high[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumed {position} of {high}")
            batches = await consumer.getmany(*tps, timeout_ms=500)
            for tp, msgs in batches.items():
                for m in msgs:
                    out.append(
                        ConsumedRecord(
                            tp.partition,
                            m.offset,
                            m.key,
                            m.value,
                            tuple(m.headers or ()),
                            m.timestamp,
                        )
                    )
                    position[tp] = m.offset + 1
        return tuple(sorted(out, key=lambda r: (r.partition, r.offset)))
    finally:
        await consumer.stop()


def roundtrip(bootstrap: str, topic: str, codec: str, records: Sequence[Record]) -> RoundTrip:
    async def run() -> RoundTrip:
        delivered = await _produce(bootstrap, topic, records, codec)
        partitions = sorted({r.partition for r in records})
        consumed = await _consume_all(bootstrap, topic, partitions, 30.0)
        return RoundTrip(tuple(delivered), consumed)

    return asyncio.run(run())


def offsets_for_times(
    bootstrap: str, topic: str, partition: int, timestamps: Sequence[int]
) -> dict[int, int | None]:
    async def run() -> dict[int, int | None]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id=CLIENT_ID)
        await consumer.start()
        try:
            tp = TopicPartition(topic, partition)
            out: dict[int, int | None] = {}
            for ts in timestamps:
                found = (await consumer.offsets_for_times({tp: ts}))[tp]
                out[ts] = None if found is None else found.offset
            return out
        finally:
            await consumer.stop()

    return asyncio.run(run())
