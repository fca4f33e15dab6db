"""Record batches v2: building, reading, CRC span, control batches, compaction rebuild."""

from __future__ import annotations

import struct

import pytest

from riverbed.clock import ManualClock
from riverbed.errors import (
    CorruptRecordError,
    LegacyMessageFormatError,
    RiverbedError,
    UnsupportedCompressionError,
)
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader, crc32c, set_base_offset
from riverbed.protocol.records import (
    ControlRecordType,
    Header,
    Record,
    SimpleRecord,
    build_batch,
    build_control_batch,
    iter_records,
    parse_control_record,
    read_batch,
    rebuild_batch,
)

TS = 1_700_000_000_000


def _sample() -> list[SimpleRecord]:
    return [
        SimpleRecord(b"k0", b"v0", [Header("h", b"x")], TS),
        SimpleRecord(None, b"v1", [("null", None), ("ключ", b"\x00\xff")], TS + 5),
        SimpleRecord(b"k2", None, (), TS - 2),
        SimpleRecord(b"", b"", (), None),
    ]


def test_header_fields_are_written_where_kafka_puts_them() -> None:
    buf = build_batch(
        _sample(),
        base_offset=100,
        compression=0,
        producer_id=77,
        producer_epoch=5,
        base_sequence=9,
        is_transactional=True,
        partition_leader_epoch=3,
    )
    (base_offset, length, epoch, magic) = struct.unpack_from(">qiib", buf)
    assert (base_offset, length + 12, epoch, magic) == (100, len(buf), 3, 2)
    (attributes, last_delta, base_ts, max_ts, pid, pepoch, seq, count) = struct.unpack_from(
        ">hiqqqhii", buf, 21
    )
    assert attributes == 0x10  # transactional, CreateTime, no codec
    assert (last_delta, base_ts, max_ts) == (3, TS, TS + 5)
    assert (pid, pepoch, seq, count) == (77, 5, 9, 4)
    assert struct.unpack_from(">I", buf, 17)[0] == crc32c(buf[21:])


def test_round_trip_keeps_keys_values_headers_offsets_timestamps() -> None:
    header, records = read_batch(build_batch(_sample(), base_offset=100))
    assert header.records_count == 4
    assert records == [
        Record(100, TS, b"k0", b"v0", (Header("h", b"x"),)),
        Record(101, TS + 5, None, b"v1", (Header("null", None), Header("ключ", b"\x00\xff"))),
        Record(102, TS - 2, b"k2", None, ()),
        Record(103, TS, b"", b"", ()),
    ]


def test_tuples_are_accepted_as_records() -> None:
    buf = build_batch(
        [(b"a", b"1"), (b"b", b"2", TS + 1), (b"c", None, TS, [("x", b"y")])], base_timestamp=TS
    )
    _, records = read_batch(buf)
    assert [(r.key, r.value, r.timestamp) for r in records] == [
        (b"a", b"1", TS),
        (b"b", b"2", TS + 1),
        (b"c", None, TS),
    ]
    assert records[2].headers == (Header("x", b"y"),)


def test_missing_timestamps_come_from_the_clock() -> None:
    clock = ManualClock(now_ms=TS + 42)
    _, records = read_batch(build_batch([(b"k", b"v")], clock=clock))
    assert records[0].timestamp == TS + 42


def test_log_append_time_batches_report_max_timestamp_for_every_record() -> None:
    buf = build_batch([(b"a", b"1", TS), (b"b", b"2", TS + 9)], timestamp_type=1)
    header, records = read_batch(buf)
    assert header.timestamp_type == 1
    assert [r.timestamp for r in records] == [TS + 9, TS + 9]


def test_crc_covers_attributes_to_end_but_not_offset_or_leader_epoch() -> None:
    buf = bytearray(build_batch(_sample()))
    set_base_offset(buf, 5_000)
    struct.pack_into(">i", buf, 12, 99)  # partitionLeaderEpoch is outside the CRC
    header, records = read_batch(buf)
    assert (header.base_offset, header.partition_leader_epoch) == (5_000, 99)
    assert records[0].offset == 5_000
    for position in (21, 30, 60, HEADER_SIZE + 3, len(buf) - 1):
        corrupted = bytearray(buf)
        corrupted[position] ^= 0x01
        with pytest.raises(CorruptRecordError, match="CRC"):
            read_batch(corrupted)


def _resigned(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c(buf[21:]))
    return bytes(buf)


def test_record_count_must_match_the_records() -> None:
    buf = bytearray(build_batch(_sample()))
    struct.pack_into(">i", buf, 57, 3)
    with pytest.raises(CorruptRecordError, match="left after"):
        read_batch(_resigned(buf))
    struct.pack_into(">i", buf, 57, 5)
    with pytest.raises(CorruptRecordError, match="truncated"):
        read_batch(_resigned(buf))


def test_record_length_must_match_its_fields() -> None:
    buf = bytearray(build_batch([(b"key", b"value", TS)]))
    buf[HEADER_SIZE] += 2  # first record's length varint (small: one byte), now too long
    with pytest.raises(CorruptRecordError):
        read_batch(_resigned(buf))


def test_negative_lengths_other_than_null_are_corrupt() -> None:
    buf = bytearray(build_batch([(b"k", b"v", TS)]))
    # record: length, attributes, tsDelta, offsetDelta, keyLength at HEADER_SIZE + 4
    assert buf[HEADER_SIZE + 4] == 2  # zig-zag 1
    buf[HEADER_SIZE + 4] = 3  # zig-zag -2
    with pytest.raises(CorruptRecordError, match="negative key length"):
        read_batch(_resigned(buf))


def test_legacy_magic_is_refused() -> None:
    buf = bytearray(build_batch([(b"k", b"v", TS)]))
    for magic in (0, 1):
        buf[16] = magic
        with pytest.raises(LegacyMessageFormatError):
            read_batch(buf)


def test_unknown_codec_id_is_unsupported() -> None:
    buf = bytearray(build_batch([(b"k", b"v", TS)]))
    struct.pack_into(">h", buf, 21, 5)
    with pytest.raises(UnsupportedCompressionError):
        read_batch(_resigned(buf))
    with pytest.raises(UnsupportedCompressionError):
        build_batch([(b"k", b"v")], compression=7)


def test_truncated_batches_are_corrupt_at_every_length() -> None:
    buf = build_batch(_sample(), compression=3)
    for n in range(len(buf)):
        with pytest.raises(RiverbedError):
            read_batch(buf[:n])


def test_build_refuses_empty_and_out_of_range() -> None:
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v")], producer_epoch=1 << 15)
    with pytest.raises(ValueError):
        build_batch([(b"k", b"v")], timestamp_type=2)


# ---------------------------------------------------------------- blobs of several batches


def test_iter_records_walks_every_batch_and_skips_control_records() -> None:
    blob = (
        build_batch(
            [(b"a", b"1", TS), (b"b", b"2", TS)],
            base_offset=0,
            producer_id=1,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )
        + build_control_batch(True, producer_id=1, producer_epoch=0, timestamp=TS, base_offset=2)
        + build_batch([(b"c", b"3", TS)], base_offset=3, compression=4)
    )
    assert [(r.offset, r.key) for r in iter_records(blob)] == [(0, b"a"), (1, b"b"), (3, b"c")]
    assert [r.offset for r in iter_records(blob, include_control=True)] == [0, 1, 2, 3]


def test_partial_tail_is_skipped_only_when_allowed() -> None:
    blob = build_batch([(b"a", b"1", TS)]) + build_batch([(b"b", b"2", TS)], base_offset=1)
    cut = blob[:-7]
    assert [r.key for r in iter_records(cut, allow_partial_tail=True)] == [b"a"]
    assert [r.key for r in iter_records(blob[:5], allow_partial_tail=True)] == []
    with pytest.raises(CorruptRecordError):
        list(iter_records(cut))


# ----------------------------------------------------------------------- control batches


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch_layout(commit: bool) -> None:
    buf = build_control_batch(
        commit,
        producer_id=4000,
        producer_epoch=7,
        timestamp=TS,
        base_offset=12,
        coordinator_epoch=21,
    )
    header, [record] = read_batch(buf)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 7, -1)
    assert (record.offset, record.timestamp) == (12, TS)
    assert record.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert record.value == struct.pack(">hi", 0, 21)
    marker = parse_control_record(record)
    assert marker.type == (ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    assert (marker.is_commit, marker.is_abort) == (commit, not commit)
    assert marker.coordinator_epoch == 21


def test_control_record_of_unknown_type_and_bad_keys() -> None:
    unknown = Record(0, TS, struct.pack(">hh", 0, 3), b"whatever")
    assert parse_control_record(unknown).type == 3
    with pytest.raises(CorruptRecordError):
        parse_control_record(Record(0, TS, b"\x00", None))
    with pytest.raises(CorruptRecordError):
        parse_control_record(Record(0, TS, struct.pack(">hh", 0, 1), b"\x00"))


# ------------------------------------------------------------------- compaction rebuild


def _producer_batch(compression: int = 0) -> tuple[BatchHeader, list[Record]]:
    buf = build_batch(
        [(f"k{i}".encode(), f"v{i}".encode(), TS + i, [("i", str(i).encode())]) for i in range(5)],
        base_offset=40,
        compression=compression,
        producer_id=9,
        producer_epoch=2,
        base_sequence=30,
        partition_leader_epoch=4,
    )
    return read_batch(buf)


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])
def test_rebuild_keeps_first_and_last_offset_and_producer_state(compression: int) -> None:
    header, records = _producer_batch(compression)
    kept = [records[1], records[3]]  # drops the first and the last record
    new_header, new_records = read_batch(rebuild_batch(header, kept))
    assert new_records == kept
    assert new_header.base_offset == 40
    assert new_header.last_offset == header.last_offset == 44
    assert new_header.last_sequence == header.last_sequence == 34
    assert (new_header.producer_id, new_header.producer_epoch, new_header.base_sequence) == (
        9,
        2,
        30,
    )
    assert new_header.partition_leader_epoch == 4
    assert new_header.compression == compression
    assert new_header.records_count == 2
    assert new_header.base_timestamp == TS + 1  # not preserved: the first kept record's
    assert new_header.max_timestamp == TS + 3


def test_rebuild_with_all_records_is_identical_to_the_original() -> None:
    buf = build_batch(
        [(b"a", b"1", TS), (b"b", b"2", TS + 1)],
        base_offset=3,
        producer_id=1,
        producer_epoch=0,
        base_sequence=0,
    )
    header, records = read_batch(buf)
    assert rebuild_batch(header, records) == buf


def test_rebuild_to_empty_keeps_the_producers_last_sequence() -> None:
    header, _ = _producer_batch(compression=3)
    new_header, new_records = read_batch(rebuild_batch(header, []))
    assert new_records == []
    assert new_header.records_count == 0
    assert (new_header.base_offset, new_header.last_offset) == (40, 44)
    assert new_header.last_sequence == 34
    assert new_header.compression == 0
    assert new_header.base_timestamp == new_header.max_timestamp == header.max_timestamp


def test_rebuild_with_delete_horizon_sets_the_attribute_and_base_timestamp() -> None:
    header, records = _producer_batch()
    new_header, new_records = read_batch(
        rebuild_batch(header, records[2:], delete_horizon_ms=TS * 2)
    )
    assert new_header.attributes & 0x40
    assert new_header.base_timestamp == TS * 2
    assert new_records == records[2:]  # absolute timestamps survive the new base
    again_header, _ = read_batch(rebuild_batch(new_header, new_records[1:]))
    assert again_header.base_timestamp == TS * 2  # an existing horizon is kept


def test_rebuild_refuses_records_outside_or_out_of_order() -> None:
    header, records = _producer_batch()
    stranger = Record(45, TS, b"k", b"v")
    with pytest.raises(ValueError):
        rebuild_batch(header, [records[0], stranger])
    with pytest.raises(ValueError):
        rebuild_batch(header, [records[2], records[1]])


def test_non_utf8_header_keys_survive_read_and_rebuild_byte_for_byte() -> None:
    buf = bytearray(build_batch([(b"k", b"v", TS, [("ab", b"1")])]))
    position = bytes(buf).index(b"ab")
    buf[position : position + 2] = b"\xff\xfe"  # not UTF-8 (Kafka's Java client allows it)
    buf = bytearray(_resigned(buf))
    header, [record] = read_batch(buf)
    assert record.headers[0].key == "\udcff\udcfe"
    assert rebuild_batch(header, [record]) == bytes(buf)


def test_decoded_records_are_ordinary_frozen_values() -> None:
    _, records = read_batch(build_batch(_sample()))
    again = [Record(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]
    assert records == again
    assert {hash(r) for r in records} == {hash(r) for r in again}
    with pytest.raises(AttributeError):
        records[0].offset = 5  # type: ignore[misc]
