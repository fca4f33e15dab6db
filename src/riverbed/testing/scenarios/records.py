"""The plain data every client scenario produces and observes.

A scenario is given :class:`Record` values (what to produce: explicit partition, key,
value, headers, CreateTime timestamp) and answers with :class:`RoundTrip` (what the client
saw: the offsets its delivery reports named and the records read back by assign/seek).
Values are frozen and compare by value, so ``expected == observed`` is the whole check.

Partitions are explicit because the clients' default partitioners differ (murmur2 in Java
and kafka-python, CRC32-based in librdkafka); the broker's behaviour is what is under test.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

CODECS: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")
"""Compression codecs, named as in ``compression.type``; index = wire codec id."""

Header = tuple[str, bytes | None]

TEXT_HEADERS: tuple[Header, ...] = (("trace", b"compat"), ("kind", b"text"))


@dataclass(frozen=True, slots=True)
class Record:
    """A record to produce: it must come back identical, with an offset."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """A record as a consumer returned it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp_ms: int

    def as_produced(self) -> Record:
        return Record(self.partition, self.key, self.value, self.headers, self.timestamp_ms)


@dataclass(frozen=True, slots=True)
class RoundTrip:
    """Delivery reports in production order, then every record read back, by (partition, offset)."""

    delivered: tuple[tuple[int, int], ...]
    consumed: tuple[ConsumedRecord, ...]
    notes: dict[str, object] = field(default_factory=dict, compare=False)


def make_records(
    count: int,
    partitions: int = 3,
    *,
    seed: int = 0,
    base_timestamp_ms: int = 1_700_000_000_000,
    text_only: bool = False,
    with_timestamps: bool = True,
    null_headers: bool = True,
) -> list[Record]:
    """Deterministic keyed records with headers spread over ``partitions``.

    ``text_only`` keeps keys and values printable ASCII without ``|`` or newlines and gives
    every record the same :data:`TEXT_HEADERS` (for kcat, which delimits text and sets
    headers per run, not per record); otherwise they include arbitrary bytes, an
    empty value, a null value and a null header value.
    """
    rng = random.Random(seed)
    out = []
    for i in range(count):
        key = f"key-{i}".encode()
        if text_only:
            value: bytes | None = f"value-{i}-{rng.randrange(10**9)}".encode() * (1 + i % 3)
            headers: tuple[Header, ...] = TEXT_HEADERS
        else:
            value = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
            if i % 7 == 3:
                value = b""
            if i % 11 == 5:
                value = None
            headers = (("trace", f"t{i}".encode()), ("bin", bytes([i % 256, 0, 255])))
            if i % 5 == 0 and null_headers:
                headers += (("null", None),)
        ts = base_timestamp_ms + i * 1000 if with_timestamps else None
        out.append(Record(i % partitions, key, value, headers, ts))
    return out


def expected_consumed(
    records: Sequence[Record], delivered: Sequence[tuple[int, int]]
) -> tuple[ConsumedRecord, ...]:
    """What a consumer must read back: ``records`` at their delivered offsets, sorted."""
    out = []
    for rec, (partition, offset) in zip(records, delivered, strict=True):
        assert rec.timestamp_ms is not None, "expected_consumed needs explicit timestamps"
        out.append(
            ConsumedRecord(partition, offset, rec.key, rec.value, rec.headers, rec.timestamp_ms)
        )
    return tuple(sorted(out, key=lambda r: (r.partition, r.offset)))
