"""PartitionLog: append, read, offsets, rolling, timestamps, flush futures, producer checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from _batches import batch, values

from riverbed.clock import ManualClock
from riverbed.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    LogClosedError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
)
from riverbed.protocol.batch import BatchHeader, validate_batch
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.config import FlushPolicy


def open_log(tmp_path: Path, clock: ManualClock | None = None, **cfg: object) -> PartitionLog:
    return PartitionLog.open(
        tmp_path / "t-0",
        LogConfig(**cfg),  # type: ignore[arg-type]
        clock=clock or ManualClock(),
    )


def test_append_assigns_offsets_and_reads_back_whole_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    r1 = log.append(batch(b"a", b"b", b"c"))
    r2 = log.append(batch(b"d"))
    assert (r1.base_offset, r1.last_offset, r2.base_offset, r2.last_offset) == (0, 2, 3, 3)
    assert log.log_end_offset == log.high_watermark == 4
    out = log.read(0, 1 << 20)
    assert values(out.records) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
    assert out.high_watermark == 4 and out.log_start_offset == 0
    # reading from the middle of a batch returns that whole batch, as Kafka does
    mid = log.read(1, 1 << 20).records
    assert BatchHeader.parse(mid).base_offset == 0
    validate_batch(mid)  # the stored bytes keep a valid CRC
    assert log.read(4, 100).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)


def test_read_respects_max_bytes_and_min_one_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for i in range(5):
        log.append(batch(bytes([i]) * 100))
    one = len(batch(b"x" * 100))
    assert len(log.read(0, one * 2 + 10).records) == one * 2
    assert len(log.read(0, 1).records) == one
    assert log.read(0, 1, min_one_batch=False).records == b""


def test_rejects_bad_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path, max_message_bytes=200)
    data = bytearray(batch(b"x"))
    data[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        log.append(bytes(data))
    with pytest.raises(MessageTooLargeError):
        log.append(batch(b"x" * 500))
    assert log.log_end_offset == 0


def test_rolls_by_size_and_by_age(tmp_path: Path) -> None:
    clock = ManualClock()
    t0 = clock.now_ms()
    one = len(batch(b"x" * 100))
    log = open_log(tmp_path, clock, segment_bytes=one * 3, segment_ms=1000)
    for _ in range(7):
        log.append(batch(b"x" * 100, ts=t0))
    assert [s.base_offset for s in log.segments()] == [0, 3, 6]
    names = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    assert "00000000000000000003.log" in names and "00000000000000000003.index" in names
    # segment.ms is measured on record timestamps (Kafka): the active segment's first
    # batch is at t0; a batch at t0+1000 is not past it, t0+1001 is
    log.append(batch(b"y", ts=t0 + 1000))
    assert [s.base_offset for s in log.segments()] == [0, 3, 6]
    log.append(batch(b"y", ts=t0 + 1001))
    assert [s.base_offset for s in log.segments()] == [0, 3, 6, 8]
    assert values(log.read(3, 1 << 20).records)[0] == (3, b"x" * 100)


def test_segment_ms_survives_restart(tmp_path: Path) -> None:
    # [9------------------)  first batch at T; restart at T+900 must not restart the clock
    clock = ManualClock()
    t0 = clock.now_ms()
    log = open_log(tmp_path, clock, segment_ms=1000)
    log.append(batch(b"a", ts=t0))
    clock.advance(900)
    log.close()
    log = open_log(tmp_path, clock, segment_ms=1000)
    clock.advance(200)
    log.append(batch(b"b", ts=clock.now_ms()))  # 1100 ms after the segment's first batch
    assert [s.base_offset for s in log.segments()] == [0, 1]
    # a segment whose records carry no timestamp falls back to wall-clock age
    log.append(batch(b"c", ts=-1))
    log.roll()
    log.append(batch(b"d", ts=-1))
    clock.advance(1001)
    log.append(batch(b"e", ts=-1))
    assert [s.base_offset for s in log.segments()] == [0, 1, 3, 4]


def test_sparse_index_lookup_finds_every_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=200)
    for i in range(200):
        log.append(batch(str(i).encode()))
    seg = log.segments()[0]
    assert 5 < len(seg.offset_index) < 200
    for off in (0, 1, 57, 123, 199):
        assert values(log.read(off, 1).records) == [(off, str(off).encode())]


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path, index_interval_bytes=100, segment_bytes=2000)
    for i in range(100):
        log.append(batch(b"v", ts=1000 + 10 * i))
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1010)
    assert log.offset_for_timestamp(1500) == (50, 1500)
    assert log.offset_for_timestamp(1990) == (99, 1990)
    assert log.offset_for_timestamp(1991) is None
    assert log.offset_for_timestamp(-2) == (0, -1)
    assert log.offset_for_timestamp(-1) == (100, -1)


def test_log_append_time(tmp_path: Path) -> None:
    clock = ManualClock(5_000)
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    result = log.append(batch(b"a", ts=1))
    assert result.log_append_time_ms == 5_000
    header = validate_batch(log.read(0, 1000).records)
    assert header.timestamp_type == 1 and header.max_timestamp == 5_000


def test_idempotent_producer(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = log.append(batch(b"a", b"b", pid=7, epoch=0, seq=0))
    log.append(batch(b"c", pid=7, epoch=0, seq=2))
    dup = log.append(batch(b"a", b"b", pid=7, epoch=0, seq=0))
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (first.base_offset, 1)
    assert log.log_end_offset == 3
    with pytest.raises(OutOfOrderSequenceError):
        log.append(batch(b"x", pid=7, epoch=0, seq=9))
    log.append(batch(b"d", pid=7, epoch=1, seq=0))
    with pytest.raises(InvalidProducerEpochError):
        log.append(batch(b"x", pid=7, epoch=0, seq=3))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(batch(b"x", pid=7, epoch=2, seq=5))
    # an unknown producer may start at any sequence (its history was deleted)
    log.append(batch(b"z", pid=8, epoch=3, seq=42))
    log.close()
    reopened = open_log(tmp_path)
    assert reopened.append(batch(b"d", pid=7, epoch=1, seq=0)).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append(batch(b"q", pid=8, epoch=3, seq=44))


def test_producer_state_survives_unclean_stop_by_replay(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for seq in range(10):
        log.append(batch(b"v" * 50, pid=1, epoch=0, seq=seq))
    log.flush()
    log.close_unclean()
    reopened = open_log(tmp_path, segment_bytes=300)
    assert reopened.append(batch(b"v" * 50, pid=1, epoch=0, seq=9)).duplicate
    assert reopened.append(batch(b"w", pid=1, epoch=0, seq=10)).base_offset == 10


def test_flush_future_and_policies(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert log.config.flush_policy is FlushPolicy.PER_APPEND and log.durable_acks
    r = log.append(batch(b"a"))
    log.flush_future(r.last_offset).result(timeout=5)
    assert log.flushed_offset == 1
    os_log = PartitionLog.open(
        tmp_path / "os-0", LogConfig(flush_messages=(1 << 63) - 1), clock=ManualClock()
    )
    assert os_log.config.flush_policy is FlushPolicy.OS
    os_log.append(batch(b"a"))
    assert os_log.flush_future(0).done() and os_log.flushed_offset == 0
    os_log.flush_future(0, force=True).result(timeout=5)
    assert os_log.flushed_offset == 1


def test_delete_records_and_truncate(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for i in range(20):
        log.append(batch(bytes([i]) * 50))
    assert log.delete_records_before(7) == 7
    assert log.segments()[0].base_offset <= 7 < log.segments()[0].next_offset
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 100)
    assert values(log.read(7, 1).records) == [(7, bytes([7]) * 50)]
    log.truncate_to(15)
    assert log.log_end_offset == 15
    log.close()
    reopened = open_log(tmp_path, segment_bytes=300)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (7, 15)
    assert reopened.append(batch(b"n")).base_offset == 15
    reopened.close()
    with pytest.raises(LogClosedError):
        reopened.append(batch(b"x"))
