"""Retention, compaction, the LogManager and crash-safe swaps."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from _batches import batch, values

from riverbed.clock import ManualClock
from riverbed.errors import ConfigError
from riverbed.protocol.records import iter_batches_with_records
from riverbed.storage import LogConfig, LogManager
from riverbed.storage.cleaner import LogCleaner
from riverbed.storage.log import PartitionLog

T0 = 1_700_000_000_000


def all_records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        if not data:
            break
        for _h, rs in iter_batches_with_records(data):
            out.extend((r.offset, r.key, r.value) for r in rs if r.offset >= offset)
            offset = _h.next_offset
    return out


def test_config_props_roundtrip_and_errors() -> None:
    cfg = LogConfig.from_kafka_props({"retention.ms": "100", "cleanup.policy": "delete,compact"})
    assert cfg.retention_ms == 100 and cfg.cleanup_policy == "compact,delete"
    assert LogConfig.from_kafka_props(cfg.to_kafka_props()) == cfg
    with pytest.raises(ConfigError):
        LogConfig.from_kafka_props({"no.such": "1"})
    with pytest.raises(ConfigError):
        LogConfig.from_kafka_props({"segment.bytes": "x"})


def test_retention_by_time_and_size(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    mgr = LogManager(tmp_path, clock=clock, start_background=False)
    one = len(batch(b"x" * 100))
    log = mgr.get_or_create("t", 0, LogConfig(segment_bytes=one * 2, retention_ms=10_000))
    for i in range(10):  # segments [0,1] [2,3] ... timestamps T0 + i*1000
        log.append(batch(b"x" * 100, ts=T0 + i * 1000))
    # [0-1][2-3][4-5][6-7][8-9]   now = T0 + 13_500: segments with max ts < T0+3500 expire
    clock.advance(13_500)
    assert mgr.run_retention() == 2
    assert log.log_start_offset == 4
    mgr.update_config(
        "t", LogConfig(segment_bytes=one * 2, retention_ms=-1, retention_bytes=one * 3)
    )
    assert mgr.run_retention() == 1 and log.log_start_offset == 6
    # everything expired: the active segment is rolled and deleted too
    mgr.update_config("t", LogConfig(segment_bytes=one * 2, retention_ms=1))
    mgr.run_retention()
    assert log.log_start_offset == log.log_end_offset == 10
    assert log.append(batch(b"new")).base_offset == 10
    mgr.close()
    mgr2 = LogManager(tmp_path, clock=clock, start_background=False)
    log2 = mgr2.get("t", 0)
    assert log2 is not None and log2.config.retention_ms == 1
    assert (log2.log_start_offset, log2.log_end_offset) == (10, 11)
    mgr2.delete_partition("t", 0)
    assert mgr2.logs() == {} and [p.name for p in tmp_path.iterdir()] == [".lock"]
    mgr2.close()


def compacted_log(tmp_path: Path, clock: ManualClock, **cfg: object) -> PartitionLog:
    config = LogConfig(cleanup_policy="compact", segment_bytes=400, **cfg)  # type: ignore[arg-type]
    log = PartitionLog.open(tmp_path / "c-0", config, clock=clock)
    for i in range(30):
        log.append(batch(f"v{i}".encode(), key=f"k{i % 3}".encode(), ts=clock.now_ms()))
    log.append(batch(None, key=b"k0", ts=clock.now_ms()))  # tombstone for k0 at offset 30
    log.roll()
    log.append(batch(b"tail", key=b"k1", ts=clock.now_ms()))
    return log


def test_compaction_keeps_latest_per_key_and_offsets(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = compacted_log(tmp_path, clock, delete_retention_ms=1000)
    before = all_records(log)
    cleaner = LogCleaner(clock)
    result = cleaner.clean(log)
    assert result is not None and result.records_removed > 0
    after = all_records(log)
    assert after == [
        (28, b"k1", b"v28"),
        (29, b"k2", b"v29"),
        (30, b"k0", None),
        (31, b"k1", b"tail"),
    ]
    assert {o for o, _k, _v in after} <= {o for o, _k, _v in before}
    assert log.log_end_offset == 32
    # the tombstone stays until delete.retention.ms has passed, then goes
    assert cleaner.clean(log) is None or (30, b"k0", None) in all_records(log)
    clock.advance(1001)
    assert cleaner.needs_cleaning(log)
    cleaner.clean(log)
    assert (30, b"k0", None) not in all_records(log)
    log.close()
    reopened = PartitionLog.open(tmp_path / "c-0", log.config, clock=clock)
    assert all_records(reopened)[-1] == (31, b"k1", b"tail")
    assert all_records(reopened)[0][0] == 28


def test_compaction_honours_min_lag_and_never_touches_active(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = compacted_log(tmp_path, clock, min_compaction_lag_ms=5000)
    assert LogCleaner(clock).clean(log) is None
    clock.advance(5001)
    active_before = log.segments()[-1].size
    assert LogCleaner(clock).clean(log) is not None
    assert log.segments()[-1].size == active_before


def test_crash_mid_clean_keeps_old_or_new(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = compacted_log(tmp_path, clock)
    expected_old = all_records(log)
    seg = log.segments()[0]
    # crash after writing .cleaned but before the commit: recovery rolls back
    cleaned = seg.log_path.with_name(seg.log_path.name + ".cleaned")
    cleaned.write_bytes(b"garbage")
    log.close_unclean()
    log = PartitionLog.open(tmp_path / "c-0", log.config, clock=clock)
    assert not cleaned.exists() and all_records(log) == expected_old
    # crash after the commit (.swap exists): recovery completes the swap
    first = log.segments()[0]
    keep = batch(b"v27", key=b"k0")  # a valid replacement segment
    data = bytearray(keep)
    data[0:8] = first.base_offset.to_bytes(8, "big")
    swap = first.log_path.with_name(first.log_path.name + ".swap")
    swap.write_bytes(bytes(data))
    os.sync()
    log.close_unclean()
    log = PartitionLog.open(tmp_path / "c-0", log.config, clock=clock)
    assert not swap.exists()
    assert values(log.read(0, 1 << 20).records) == [(0, b"v27")]


def test_the_maintenance_thread_applies_retention_on_its_own_interval(tmp_path: Path) -> None:
    """Retention runs every ``retention_check_interval_ms`` even when the rest of the
    maintenance (file deletion, producer expiry, the cleaner) waits an hour."""
    mgr = LogManager(tmp_path, retention_check_interval_ms=50, maintenance_interval_ms=3_600_000)
    try:
        log = mgr.get_or_create("t", 0, LogConfig(retention_ms=1_000))
        for i in range(3):
            log.append(batch(b"x", ts=T0 + i))  # 2023: long expired
        deadline = time.monotonic() + 30
        while log.log_start_offset < 3:
            assert time.monotonic() < deadline, f"log start {log.log_start_offset}"
            time.sleep(0.02)
        assert log.log_end_offset == 3
    finally:
        mgr.close()
