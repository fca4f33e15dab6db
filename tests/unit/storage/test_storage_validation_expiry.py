"""Append validation (timestamps, keys on compacted topics), producer-id expiry and
delayed file deletion."""

from __future__ import annotations

from pathlib import Path

import pytest
from _batches import batch, values

from riverbed.clock import ManualClock
from riverbed.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    OutOfOrderSequenceError,
    error_code_for,
)
from riverbed.protocol.batch import BatchHeader
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.records import build_batch, build_control_batch
from riverbed.storage import LogConfig, LogManager, PartitionLog

T0 = 1_700_000_000_000
HOUR = 3_600_000


def open_log(path: Path, clock: ManualClock, **cfg: object) -> PartitionLog:
    return PartitionLog.open(path, LogConfig(**cfg), clock=clock)  # type: ignore[arg-type]


# -- timestamps --------------------------------------------------------------------------


def test_kafka4_default_refuses_records_more_than_an_hour_ahead(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock)
    assert LogConfig().message_timestamp_after_max_ms == HOUR
    log.append(batch(b"ok", ts=T0 + HOUR))
    log.append(batch(b"old", ts=T0 - 365 * 24 * HOUR))  # before is unbounded by default
    with pytest.raises(InvalidTimestampError) as exc:
        log.append(build_batch([(None, b"a", T0), (None, b"b", T0 + HOUR + 1)]))
    assert error_code_for(exc.value) is ErrorCode.INVALID_TIMESTAMP
    assert "out of range" in str(exc.value)
    assert log.log_end_offset == 2


def test_before_max_checks_every_record_not_just_the_header(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, message_timestamp_before_max_ms=1000)
    # base timestamp and max timestamp are fine; the middle record is too old
    records = [(None, b"a", T0), (None, b"b", T0 - 1001), (None, b"c", T0)]
    data = build_batch(records, base_timestamp=T0)
    assert BatchHeader.parse(data).max_timestamp == T0
    with pytest.raises(InvalidTimestampError):
        log.append(data)
    log.append(build_batch([(None, b"a", T0 - 1000), (None, b"nots", -1)], base_timestamp=T0))
    assert log.log_end_offset == 2


def test_log_append_time_topics_skip_timestamp_checks(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = open_log(
        tmp_path / "t-0",
        clock,
        message_timestamp_type="LogAppendTime",
        message_timestamp_before_max_ms=0,
        message_timestamp_after_max_ms=0,
    )
    assert log.append(batch(b"x", ts=T0 + 10 * HOUR)).log_append_time_ms == T0


def test_timestamp_props_roundtrip() -> None:
    cfg = LogConfig.from_kafka_props(
        {
            "message.timestamp.before.max.ms": "5",
            "message.timestamp.after.max.ms": "7",
            "min.cleanable.dirty.ratio": "0.25",
            "max.compaction.lag.ms": "100",
        }
    )
    assert (cfg.message_timestamp_before_max_ms, cfg.message_timestamp_after_max_ms) == (5, 7)
    assert (cfg.min_cleanable_dirty_ratio, cfg.max_compaction_lag_ms) == (0.25, 100)
    assert LogConfig.from_kafka_props(cfg.to_kafka_props()) == cfg


# -- keys on compacted topics -------------------------------------------------------------


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_compacted_topic_refuses_records_without_key(tmp_path: Path, policy: str) -> None:
    clock = ManualClock(T0)
    log = open_log(tmp_path / "t-0", clock, cleanup_policy=policy)
    with pytest.raises(InvalidRecordError) as exc:
        log.append(build_batch([(b"k", b"1", T0), (None, b"2", T0)]))
    assert error_code_for(exc.value) is ErrorCode.INVALID_RECORD
    assert str(exc.value).startswith("One or more records have been rejected due to 1 record")
    [(index, message)] = exc.value.record_errors  # only the keyless record is named
    assert index == 1
    assert message.startswith("Compacted topic cannot accept message without key")
    with pytest.raises(InvalidRecordError) as exc:
        log.append(build_batch([(None, b"1", T0), (b"k", b"2", T0), (None, b"3", T0)]))
    assert [i for i, _m in exc.value.record_errors] == [0, 2]
    log.append(batch(b"1", key=b"k", ts=T0))
    with pytest.raises(InvalidRecordError):  # only the coordinator writes markers
        log.append(build_control_batch(True, producer_id=1, producer_epoch=0, timestamp=T0))
    log.append_control_marker(1, 0, True, 0)  # a keyless control record is fine
    assert log.log_end_offset == 2
    # a delete-only topic takes keyless records
    plain = open_log(tmp_path / "p-0", clock)
    plain.append(batch(b"2", ts=T0))


# -- producer id expiry -------------------------------------------------------------------


def test_idle_producers_expire_and_may_restart_at_any_sequence(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = PartitionLog.open(
        tmp_path / "t-0", LogConfig(), clock=clock, producer_id_expiration_ms=10_000
    )
    log.append(batch(b"a", pid=7, epoch=0, seq=0, ts=T0))
    log.append(batch(b"b", pid=8, epoch=0, seq=0, ts=T0 + 5000))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(batch(b"c", pid=7, epoch=0, seq=5, ts=T0))
    clock.advance(9_999)
    assert log.remove_expired_producers() == 0
    clock.advance(1)
    assert log.remove_expired_producers() == 1  # 7 is 10 s idle, 8 only 5 s
    assert set(log.producers.entries) == {8}
    # Kafka 4 (KIP-360): an unknown producer id is accepted with any sequence
    r = log.append(batch(b"c", pid=7, epoch=0, seq=5, ts=clock.now_ms()))
    assert not r.duplicate and r.base_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        log.append(batch(b"d", pid=8, epoch=0, seq=3, ts=clock.now_ms()))


def test_expired_producers_leave_snapshots_and_are_dropped_at_load(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    mgr = LogManager(
        tmp_path, clock=clock, start_background=False, producer_id_expiration_ms=10_000
    )
    log = mgr.get_or_create("t", 0, LogConfig())
    log.append(batch(b"a", pid=1, epoch=0, seq=0, ts=T0))
    log.append(batch(b"b", pid=2, epoch=0, seq=0, ts=T0 + 8000))
    clock.advance(10_000)
    assert mgr.run_producer_expiration() == 1
    mgr.close()  # the clean-shutdown snapshot holds producer 2 only
    clock.advance(5000)  # now producer 2 is idle for 7 s: still alive
    mgr = LogManager(
        tmp_path, clock=clock, start_background=False, producer_id_expiration_ms=10_000
    )
    log2 = mgr.get("t", 0)
    assert log2 is not None and set(log2.producers.entries) == {2}
    log2.close_unclean()  # no snapshot at the end: the header replay must drop it too
    clock.advance(5000)
    reopened = PartitionLog.open(
        tmp_path / "t-0", LogConfig(), clock=clock, producer_id_expiration_ms=10_000
    )
    assert reopened.producers.entries == {}
    reopened.close()


# -- file.delete.delay.ms ------------------------------------------------------------------


def test_retired_segments_are_renamed_then_deleted_after_the_delay(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    one = len(batch(b"x" * 100))
    log = open_log(tmp_path / "t-0", clock, segment_bytes=one, file_delete_delay_ms=1000)
    for i in range(3):
        log.append(batch(b"x" * 100, ts=T0 + i))
    first = log.segments()[0]
    assert log.delete_records_before(2) == 2
    names = {p.name for p in (tmp_path / "t-0").iterdir()}
    assert "00000000000000000000.log" not in names
    assert "00000000000000000000.log.deleted" in names
    assert "00000000000000000000.index.deleted" in names
    assert first.fd >= 0  # still open for a concurrent reader until the delete
    assert log.pending_deletions == 2
    clock.advance(999)
    assert log.delete_expired_files() == 0
    clock.advance(1)
    assert log.delete_expired_files() == 2 and first.fd == -1
    assert not [p for p in (tmp_path / "t-0").iterdir() if p.name.endswith(".deleted")]
    assert values(log.read(2, 1 << 20).records) == [(2, b"x" * 100)]


def test_zero_delay_deletes_at_once_and_recovery_removes_leftovers(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    one = len(batch(b"x" * 100))
    log = open_log(tmp_path / "t-0", clock, segment_bytes=one, file_delete_delay_ms=0)
    for i in range(3):
        log.append(batch(b"x" * 100, ts=T0 + i))
    log.delete_records_before(1)
    assert not [p for p in (tmp_path / "t-0").iterdir() if ".deleted" in p.name]
    log.set_config(LogConfig(segment_bytes=one, file_delete_delay_ms=60_000))
    log.delete_records_before(2)
    assert [p for p in (tmp_path / "t-0").iterdir() if ".deleted" in p.name]
    log.close_unclean()  # crash with retired files on disk
    reopened = open_log(tmp_path / "t-0", clock, segment_bytes=one)
    assert not [p for p in (tmp_path / "t-0").iterdir() if ".deleted" in p.name]
    assert (reopened.log_start_offset, reopened.log_end_offset) == (2, 3)
    assert [s.base_offset for s in reopened.segments()] == [2]
    reopened.close()


def test_manager_maintenance_deletes_due_files(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    mgr = LogManager(tmp_path, clock=clock, start_background=False)
    one = len(batch(b"x"))
    log = mgr.get_or_create("t", 0, LogConfig(segment_bytes=one, retention_ms=1000))
    log.append(batch(b"x", ts=T0))
    log.append(batch(b"x", ts=T0))
    clock.advance(2000)
    assert mgr.run_retention() >= 1
    assert log.pending_deletions >= 1
    assert mgr.run_file_deletion() == 0  # file.delete.delay.ms is 60 s by default
    clock.advance(60_000)
    assert mgr.run_file_deletion() >= 1 and log.pending_deletions == 0
    mgr.close()
