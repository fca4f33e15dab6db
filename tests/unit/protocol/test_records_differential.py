"""Differential tests: our batches read by kafka-python's and aiokafka's record classes,
and theirs read by ours, under every codec each library supports."""

from __future__ import annotations

import struct
from typing import Any

import aiokafka.record.default_records as aiokafka_records
import kafka.codec
import kafka.record.default_records as kafka_records
import pytest
from aiokafka.record.control_record import ControlRecord

from riverbed.protocol.records import Header, Record, build_batch, build_control_batch, read_batch

TS = 1_700_000_000_000
CODECS = [0, 1, 2, 3, 4]
LIBS = {"kafka-python": kafka_records, "aiokafka": aiokafka_records}

RECORDS: list[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]] = [
    (b"key", b"value" * 50, TS, [("h1", b"v1"), ("h-null", None)]),
    (None, b"no key", TS + 1000, []),
    (b"tombstone", None, TS - 1, [("ünïcødé", b"\x00\x01")]),
    (b"", b"", TS + 70_000, []),
    (b"k" * 300, b"x" * 20_000, TS + 3, [("big", b"y" * 200)]),
]


def _supported(lib: str, codec: int) -> bool:
    return not (lib == "kafka-python" and codec == 2 and not kafka.codec.has_snappy())


def _cases() -> list[Any]:
    return [pytest.param(lib, c, id=f"{lib}-{c}") for lib in LIBS for c in CODECS]


@pytest.mark.parametrize(("lib", "codec"), _cases())
def test_ours_build_theirs_read(lib: str, codec: int) -> None:
    if not _supported(lib, codec):
        pytest.skip("codec library missing")
    buf = build_batch(
        RECORDS,
        base_offset=1000,
        compression=codec,
        producer_id=5,
        producer_epoch=1,
        base_sequence=11,
    )
    batch = LIBS[lib].DefaultRecordBatch(bytearray(buf))
    assert batch.validate_crc()
    assert (batch.base_offset, batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        1000,
        5,
        1,
        11,
    )
    assert batch.compression_type == codec
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    want = [(1000 + i, ts, k, v, h) for i, (k, v, ts, h) in enumerate(RECORDS)]
    assert got == want


@pytest.mark.parametrize(("lib", "codec"), _cases())
def test_theirs_build_ours_read(lib: str, codec: int) -> None:
    if not _supported(lib, codec):
        pytest.skip("codec library missing")
    builder = LIBS[lib].DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=True,
        producer_id=8,
        producer_epoch=2,
        base_sequence=0,
        batch_size=1 << 20,
    )
    for offset, (k, v, ts, h) in enumerate(RECORDS):
        builder.append(offset, timestamp=ts, key=k, value=v, headers=h)
    buf = bytes(builder.build())
    header, records = read_batch(buf)
    assert header.is_transactional and header.compression == codec
    assert (header.producer_id, header.producer_epoch, header.last_offset_delta) == (8, 2, 4)
    assert records == [
        Record(i, ts, k, v, tuple(Header(hk, hv) for hk, hv in h))
        for i, (k, v, ts, h) in enumerate(RECORDS)
    ]


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch_read_by_aiokafka(commit: bool) -> None:
    buf = build_control_batch(
        commit, producer_id=3, producer_epoch=4, timestamp=TS, base_offset=77, coordinator_epoch=6
    )
    batch = aiokafka_records.DefaultRecordBatch(bytearray(buf))
    assert batch.validate_crc()
    assert batch.is_control_batch and batch.is_transactional
    [record] = list(batch)
    assert record.offset == 77
    control = ControlRecord.parse(record.key)
    assert control.type_ == (1 if commit else 0) and control.version == 0
    assert struct.unpack(">hi", record.value) == (0, 6)
