"""The streaming cleaner: bounded offset map, segment groups, triggers, status, crash-safe
group swaps."""

from __future__ import annotations

import errno
import tracemalloc
from pathlib import Path

import pytest
from _batches import batch
from test_storage_maintenance import all_records

from riverbed.clock import ManualClock
from riverbed.protocol.records import build_batch
from riverbed.storage import LogConfig, LogManager, PartitionLog, faults
from riverbed.storage.cleaner import LogCleaner, group_segments_by_size
from riverbed.storage.config import LONG_MAX
from riverbed.storage.offset_map import ENTRY_BYTES, OffsetMap
from riverbed.storage.recovery import SWAP_SUFFIX

T0 = 1_700_000_000_000


def keyed_log(
    path: Path, clock: ManualClock, n: int, keys: int, per_segment: int, **cfg: object
) -> PartitionLog:
    """``n`` single-record batches, key ``k<i % keys>``, rolled every ``per_segment``."""
    config = LogConfig(cleanup_policy="compact", **cfg)  # type: ignore[arg-type]
    log = PartitionLog.open(path, config, clock=clock)
    for i in range(n):
        log.append(batch(f"v{i}".encode(), key=f"k{i % keys}".encode(), ts=clock.now_ms()))
        if (i + 1) % per_segment == 0:
            log.roll()
    log.append(batch(b"active", key=b"k0", ts=clock.now_ms()))
    return log


def latest_per_key(
    records: list[tuple[int, bytes | None, bytes | None]],
) -> dict[bytes | None, tuple[int, bytes | None]]:
    return {k: (o, v) for o, k, v in records}


def test_offset_map_is_bounded_and_batch_atomic() -> None:
    m = OffsetMap(ENTRY_BYTES * 3)
    assert m.capacity == 3
    assert m.put_batch([(b"a", 0), (b"b", 1)], 1)
    assert m.put_batch([(b"a", 2)], 2)  # an existing key takes no room
    assert not m.put_batch([(b"c", 3), (b"d", 4)], 4)  # would make 4: nothing added
    assert (len(m), m.get(b"c"), m.latest_offset) == (2, -1, 2)
    assert m.put_batch([(b"c", 3)], 3) and m.get(b"a") == 2 and m.get(b"zz") == -1


def test_tiny_dedupe_buffer_cleans_in_several_passes(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    big = keyed_log(tmp_path / "big-0", clock, 60, 6, 10)
    small = keyed_log(tmp_path / "small-0", clock, 60, 6, 10)
    full = LogCleaner(clock).clean(big)
    assert full is not None and not full.map_full and full.end_offset == 60
    expected = all_records(big)
    cleaner = LogCleaner(clock, dedupe_buffer_size=ENTRY_BYTES * 4)  # 4 of the 6 keys fit
    first = cleaner.clean(small)
    assert first is not None and first.map_full
    # the map covered [0, 4): later records, duplicates included, are untouched
    assert first.end_offset == 4
    untouched = [r for r in all_records(small) if r[0] >= 4]
    assert untouched == [(o, f"k{o % 6}".encode(), f"v{o}".encode()) for o in range(4, 60)] + [
        (60, b"k0", b"active")
    ]
    for _ in range(30):
        if cleaner.clean(small) is None or small.cleaner_offset >= 60:
            break
    assert small.cleaner_offset == 60
    assert latest_per_key(all_records(small)) == latest_per_key(expected)


def test_dedupe_buffer_smaller_than_a_batch_aborts_without_harm(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = PartitionLog.open(tmp_path / "c-0", LogConfig(cleanup_policy="compact"), clock=clock)
    log.append(build_batch([(b"a", b"1", T0), (b"b", b"2", T0), (b"c", b"3", T0)]))
    log.roll()
    log.append(batch(b"x", key=b"a", ts=T0))
    before = all_records(log)
    cleaner = LogCleaner(clock, dedupe_buffer_size=ENTRY_BYTES * 2)
    assert cleaner.clean(log) is None
    assert all_records(log) == before and log.cleaner_offset == 0
    status = cleaner.status(log)
    assert status.last_error is not None and "dedupe.buffer.size" in status.last_error


def test_small_segments_are_grouped_into_one(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = keyed_log(tmp_path / "c-0", clock, 40, 4, 4, segment_bytes=100_000)
    assert len(log.segments()) == 11
    result = LogCleaner(clock).clean(log)
    assert result is not None and (result.segments, result.segments_after) == (10, 1)
    assert [s.base_offset for s in log.segments()] == [0, 40]
    # the cleaned segment ends exactly where the group did (its last batch is kept)
    assert log.segments()[0].next_offset == 40
    assert [(o, k) for o, k, _v in all_records(log)] == [
        (36, b"k0"),
        (37, b"k1"),
        (38, b"k2"),
        (39, b"k3"),
        (40, b"k0"),
    ]
    log.close()
    reopened = PartitionLog.open(tmp_path / "c-0", log.config, clock=clock)
    assert [s.base_offset for s in reopened.segments()] == [0, 40]
    reopened.close()


def test_grouping_respects_segment_bytes() -> None:
    class Seg:
        def __init__(self, base: int, size: int) -> None:
            self.base_offset, self.size, self.next_offset = base, size, base + 10

    segs = [Seg(i * 10, size) for i, size in enumerate([40, 50, 20, 90, 5, 5])]
    groups = group_segments_by_size(segs, 100)  # type: ignore[arg-type]
    assert [[s.size for s in g] for g in groups] == [[40, 50], [20], [90, 5, 5]]


def test_cleaner_streams_instead_of_building_segments_in_memory(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    config = LogConfig(
        cleanup_policy="compact", segment_bytes=64 << 20, flush_messages=LONG_MAX, flush_ms=LONG_MAX
    )
    log = PartitionLog.open(tmp_path / "c-0", config, clock=clock)
    value = b"v" * 1000
    # 2 segments of 80 batches x 100 records x ~1 KB; the second one overwrites half the
    # keys of the first: ~12 MB survive, which the old cleaner held in memory at once
    for i in range(160):
        keys = [b"%d-%d" % (i - 80 if i >= 80 and j < 50 else i, j) for j in range(100)]
        log.append(build_batch([(k, value, T0) for k in keys]))
        if i == 79:
            log.roll()
    log.roll()
    log.append(batch(b"tail", key=b"k0", ts=T0))
    cleaner = LogCleaner(clock)
    tracemalloc.start()
    try:
        result = cleaner.clean(log)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result is not None and result.bytes_before > 15_000_000
    assert result.records_removed == 80 * 50 and result.bytes_after > 11_000_000
    assert peak < 4_000_000, f"cleaner peak memory {peak} bytes"


def test_dirty_ratio_and_max_compaction_lag_trigger(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    log = keyed_log(tmp_path / "c-0", clock, 40, 40, 10)  # 4 sealed segments, all keys new
    cleaner = LogCleaner(clock)
    status = cleaner.status(log)
    assert status.dirty_ratio == 1.0 and status.last_run_ms == -1
    assert cleaner.needs_cleaning(log)
    cleaner.clean(log)  # cleans everything: the checkpoint moves to 40
    after = cleaner.status(log)
    assert after.dirty_ratio == 0.0 and after.first_dirty_offset == 40
    assert after.last_run_ms == T0 and after.bytes_cleaned_total > 0
    assert not cleaner.needs_cleaning(log)
    # one more dirty segment next to four clean ones: ratio ~ 0.2 (<= 0.5), not cleaned
    clock.advance(10)
    for i in range(10):
        log.append(batch(b"w", key=f"k{i}".encode(), ts=clock.now_ms()))
    log.roll()
    log.append(batch(b"x", key=b"z", ts=clock.now_ms()))
    ratio = cleaner.status(log).dirty_ratio
    assert 0 < ratio < 0.5
    assert not cleaner.needs_cleaning(log)
    log.set_config(LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=ratio / 2))
    assert cleaner.needs_cleaning(log)
    # max.compaction.lag.ms forces a pass whatever the ratio once the dirty data is old
    log.set_config(LogConfig(cleanup_policy="compact", max_compaction_lag_ms=60_000))
    assert not cleaner.needs_cleaning(log)
    clock.advance(60_001)
    assert cleaner.needs_cleaning(log)


def test_max_compaction_lag_rolls_the_active_segment(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    config = LogConfig(cleanup_policy="compact", max_compaction_lag_ms=1000)
    assert (
        config.max_segment_ms == 1000
        and LogConfig(max_compaction_lag_ms=1000).max_segment_ms == LogConfig().segment_ms
    )
    log = PartitionLog.open(tmp_path / "c-0", config, clock=clock)
    log.append(batch(b"a", key=b"k", ts=T0))
    log.append(batch(b"b", key=b"k", ts=T0 + 1001))
    assert [s.base_offset for s in log.segments()] == [0, 1]


def test_manager_runs_cleaner_only_when_needed_and_reports_status(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    mgr = LogManager(tmp_path, clock=clock, start_background=False)
    log = mgr.get_or_create("c", 0, LogConfig(cleanup_policy="compact"))
    for i in range(20):
        log.append(batch(b"v", key=f"k{i % 2}".encode(), ts=T0))
    log.roll()
    log.append(batch(b"v", key=b"k0", ts=T0))
    assert len(mgr.run_cleaner()) == 1
    assert mgr.run_cleaner() == []  # nothing dirty left
    status = mgr.cleaner_status("c", 0)
    assert status is not None and status.last_result is not None
    assert status.last_result.records_removed == 18
    assert mgr.cleaner_status("nope", 0) is None
    mgr.close()


@pytest.mark.parametrize("crash_after", ["swap", "retire"])
def test_crash_during_group_swap_recovers_the_new_group(tmp_path: Path, crash_after: str) -> None:
    clock = ManualClock(T0)
    reference = keyed_log(tmp_path / "ref-0", clock, 40, 4, 4, segment_bytes=100_000)
    LogCleaner(clock).clean(reference)
    expected = all_records(reference)
    log = keyed_log(tmp_path / "c-0", clock, 40, 4, 4, segment_bytes=100_000)

    # The real swap, stopped by a failed rename (the failure point passes the source):
    # "swap" - right after the swap is committed, before any old segment is retired
    # (the first retire renames a .log); "retire" - after every old segment is retired,
    # before the swap is renamed to .log.
    reopened = _crash_cleaning(log, clock, crash_after, tmp_path / "c-0")
    assert all_records(reopened) == expected
    assert [s.base_offset for s in reopened.segments()] == [0, 40]
    names = {p.name for p in (tmp_path / "c-0").iterdir()}
    assert not any(n.endswith((".swap", ".deleted", ".cleaned")) for n in names)
    reopened.close()


def _crash_cleaning(
    log: PartitionLog, clock: ManualClock, crash_after: str, path: Path
) -> PartitionLog:
    """Clean ``log`` with its first rename of a ``.log`` (``crash_after`` "swap") or of a
    swap file ("retire") failing once, drop it uncleanly as a crash would, and return the
    log reopened from ``path``."""
    suffix = ".log" if crash_after == "swap" else SWAP_SUFFIX
    with faults.inject(
        "file.rename", error=errno.EIO, match=lambda name: name.endswith(suffix)
    ) as crash:
        assert LogCleaner(clock).clean(log) is None
    assert crash.hits == 1
    log.close_unclean()
    return PartitionLog.open(path, log.config, clock=clock)


def _superseded_log(path: Path, clock: ManualClock) -> PartitionLog:
    """44 single-record batches (keys k0..k3, a segment per 4 of ~291 bytes, two segments
    per cleaning group with ``segment.bytes`` 600): every record below offset 40 is
    superseded by 40..43, so the groups [0, 8) ... [32, 40) clean to nothing."""
    return keyed_log(path, clock, 44, 4, 4, segment_bytes=600)


def _batch_counts(log: PartitionLog) -> list[int]:
    from riverbed.protocol.records import read_batch

    counts = []
    for seg in log.segments():
        for pos, header in seg.scan(0, verify=False):
            counts.append(len(read_batch(seg.pread(pos, header.size))[1]))
    return counts


def test_no_empty_batch_is_left_where_a_whole_group_is_superseded(tmp_path: Path) -> None:
    """Kafka keeps an emptied batch only for a producer's sequence; clients (kafka-go
    v0.4.51) cannot read one of zero records.  A cleaned segment may be empty."""
    clock = ManualClock(T0)
    log = _superseded_log(tmp_path / "c-0", clock)
    result = LogCleaner(clock).clean(log)
    assert result is not None and result.records_removed == 40
    assert 0 not in _batch_counts(log)
    assert [(s.base_offset, s.size) for s in log.segments()][:5] == [
        (0, 0),
        (8, 0),
        (16, 0),
        (24, 0),
        (32, 0),
    ]
    expected = [(40, b"k0"), (41, b"k1"), (42, b"k2"), (43, b"k3"), (44, b"k0")]
    assert [(o, k) for o, k, _v in all_records(log)] == expected
    log.close()
    reopened = PartitionLog.open(tmp_path / "c-0", log.config, clock=clock)
    assert [(o, k) for o, k, _v in all_records(reopened)] == expected
    assert LogCleaner(clock).clean(reopened) is None or 0 not in _batch_counts(reopened)
    reopened.close()


@pytest.mark.parametrize("crash_after", ["swap", "retire"])
def test_crash_during_swap_of_a_group_cleaned_short_deletes_the_whole_group(
    tmp_path: Path, crash_after: str
) -> None:
    """The first group's swap is empty, its group [0, 8) two segments: recovery takes the
    group's end from ``<base>.swapend``, so segment 4's superseded records never come back
    (they would, with the end read from the swap's last batch)."""
    clock = ManualClock(T0)
    log = _superseded_log(tmp_path / "c-0", clock)
    reopened = _crash_cleaning(log, clock, crash_after, tmp_path / "c-0")
    offsets = [o for o, _k, _v in all_records(reopened)]
    assert offsets[0] == 8 and 4 not in offsets
    assert [s.base_offset for s in reopened.segments()][:2] == [0, 8]
    names = {p.name for p in (tmp_path / "c-0").iterdir()}
    assert not any(n.endswith((".swap", ".swapend", ".deleted", ".cleaned")) for n in names)
    reopened.close()
