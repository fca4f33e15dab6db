"""The record batch header fast path (riverbed.protocol.batch): parse, validate, re-base."""

from __future__ import annotations

import struct

import pytest

from riverbed.errors import CorruptRecordError, LegacyMessageFormatError
from riverbed.protocol.batch import (
    HEADER_SIZE,
    BatchHeader,
    check_magic,
    crc32c,
    iter_batches,
    read_batch_size,
    set_base_offset,
    set_log_append_time,
    validate_batch,
)
from riverbed.protocol.records import build_batch, read_batch

TS = 1_700_000_000_000


def _resign(buf: bytearray) -> bytearray:
    struct.pack_into(">I", buf, 17, crc32c(buf[21:]))
    return buf


def test_crc32c_known_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def test_validate_returns_the_header_without_decoding_records() -> None:
    buf = build_batch(
        [(b"a", b"1", TS), (b"b", b"2", TS + 4)],
        base_offset=7,
        compression=1,
        producer_id=3,
        producer_epoch=1,
        base_sequence=2147483647,
    )
    header = validate_batch(buf)
    assert header == BatchHeader.parse(buf)
    assert header.size == len(buf) == read_batch_size(buf)
    assert (header.last_offset, header.next_offset) == (8, 9)
    assert header.last_sequence == 0  # sequences wrap at int32 max, as in Kafka
    assert header.compression == 1 and header.timestamp_type == 0


def test_iter_batches_yields_positions_and_refuses_trailing_bytes() -> None:
    one = build_batch([(b"a", b"1", TS)])
    two = build_batch([(b"b", b"2", TS)], base_offset=1, compression=3)
    assert [(pos, h.base_offset) for pos, h in iter_batches(one + two)] == [(0, 0), (len(one), 1)]
    with pytest.raises(CorruptRecordError):
        list(iter_batches(one + two[:20]))
    with pytest.raises(CorruptRecordError):
        list(iter_batches(one + b"\x00" * 5))


def test_set_base_offset_rewrites_in_place_and_keeps_the_crc() -> None:
    buf = bytearray(build_batch([(b"a", b"1", TS), (b"b", b"2", TS)]))
    set_base_offset(buf, 1 << 40)
    header, records = read_batch(buf)
    assert header.base_offset == 1 << 40
    assert [r.offset for r in records] == [1 << 40, (1 << 40) + 1]


def test_length_field_bounds() -> None:
    buf = bytearray(build_batch([(b"a", b"1", TS)]))
    too_long = bytearray(buf)
    struct.pack_into(">i", too_long, 8, len(buf))
    with pytest.raises(CorruptRecordError, match="claims"):
        validate_batch(too_long)
    too_short = bytearray(buf)
    struct.pack_into(">i", too_short, 8, HEADER_SIZE - 13)
    with pytest.raises(CorruptRecordError, match="too small"):
        validate_batch(too_short)
    negative = bytearray(buf)
    struct.pack_into(">i", negative, 23, -1)
    with pytest.raises(CorruptRecordError, match="negative"):
        validate_batch(_resign(negative))


def test_magic_checks() -> None:
    buf = bytearray(build_batch([(b"a", b"1", TS)]))
    buf[16] = 3
    with pytest.raises(CorruptRecordError, match="unknown record batch magic"):
        check_magic(buf)
    legacy = bytearray(30)
    legacy[16] = 1
    with pytest.raises(LegacyMessageFormatError):
        validate_batch(legacy)
    with pytest.raises(CorruptRecordError):
        check_magic(b"\x00" * 10)


def test_set_log_append_time_stamps_every_record_and_re_signs() -> None:
    one = build_batch([(b"a", b"1", TS)])
    blob = bytearray(one + build_batch([(b"b", b"2", TS), (b"c", b"3", TS + 1)], compression=4))
    set_log_append_time(blob, TS + 500, pos=len(one))
    first, second = (h for _, h in iter_batches(blob))
    assert (first.timestamp_type, second.timestamp_type) == (0, 1)
    assert second.max_timestamp == TS + 500
    _, records = read_batch(blob, len(one))
    assert [r.timestamp for r in records] == [TS + 500, TS + 500]
