"""Review of pre-zeroed segment space (riverbed.storage.preallocate): the paths the first
tests did not walk.

Real files and real threads, no OS patching: a background GroupCommitFlusher writes the
zeros on its helper threads while other threads append and read (zeros must never be
served nor overwrite an append); truncation, DeleteRecords, retention and compaction
while a window exists; the flush mark's byte position; recovery after a crash with the
index files gone; the policy's bounds (many logs, a big-fsync stream).  Crash states
that cannot be reached through the log are built as the zero window leaves them.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _batches import batch
from _prealloc import (
    UNBOUNDED,
    append_flushed,
    append_values,
    file_size,
    open_log,
    tail_is_zeros,
    values,
)

from riverbed.clock import ManualClock
from riverbed.protocol.records import iter_batches_with_records
from riverbed.storage import faults, preallocate
from riverbed.storage.cleaner import LogCleaner
from riverbed.storage.flush_mark import read_flush_mark
from riverbed.storage.flusher import GroupCommitFlusher
from riverbed.storage.preallocate import DEFAULT_WINDOW_BYTES, SMALL_FSYNC_BYTES
from riverbed.storage.segment import LogSegment
from riverbed.testing.log_contents import served_values as served


@pytest.fixture(autouse=True)
def _default_window() -> Iterator[None]:
    # The default window, and a budget no other test's logs can have used up: in one
    # pytest process the logs of earlier tests (brokers still running, logs dropped
    # without a close and not yet collected) hold their zeros against the same budget.
    preallocate.configure(DEFAULT_WINDOW_BYTES, budget_bytes=UNBOUNDED)
    yield
    preallocate.configure(DEFAULT_WINDOW_BYTES)
    assert faults.armed_points() == []


# -- concurrency: zeros written on the flusher's threads while appends and reads go on ----


def test_concurrent_appends_reads_and_zero_fills_never_mix(tmp_path: Path) -> None:
    """4 appenders (each waits for its fsync, as acks=all), a reader, a checkpointer and
    the flusher's helpers writing zeros; small segments so rolls (and their cuts) happen
    meanwhile.  Nothing served is zeros, no append is overwritten by zeros, every file
    ends at its logical end or with zeros only, and no window exceeds its size."""
    window = 16 * 1024
    preallocate.configure(window, budget_bytes=UNBOUNDED)
    flusher = GroupCommitFlusher(checkpoint_interval_ms=50)
    flusher.start()
    directory = tmp_path / "t-0"
    log = open_log(directory, 40 * 1024, flusher=flusher)
    stop = threading.Event()
    errors: list[BaseException] = []
    appended: dict[int, bytes] = {}
    lock = threading.Lock()
    windows_seen = [0]

    def appender(w: int) -> None:
        try:
            for i in range(150):
                value = b"w%d-%05d-" % (w, i) + bytes([65 + w]) * (50 + 37 * (i % 7))
                result = log.append(batch(value))
                with lock:
                    appended[result.base_offset] = value
                log.flush_future(result.last_offset).result(timeout=60)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        rng = random.Random(7)
        try:
            while not stop.is_set():
                end = log.log_end_offset
                if end == 0:
                    continue
                offset = rng.randrange(0, end)
                data = log.read(offset, rng.choice([100, 4096, 1 << 20])).records
                for _h, records in iter_batches_with_records(data):
                    for r in records:
                        assert r.value is not None and r.value[:1] == b"w", r.value
                active = log.segments()[-1]
                windows_seen[0] = max(windows_seen[0], active.allocated - active.size)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=appender, args=(w,)) for w in range(4)]
    read_thread = threading.Thread(target=reader)
    read_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    stop.set()
    read_thread.join(60)
    assert not errors, errors
    assert len(log.segments()) > 1, "the scenario should roll"
    assert 0 < windows_seen[0] <= window + preallocate.PAGE
    got = {}
    offset = 0
    while offset < log.log_end_offset:
        for h, records in iter_batches_with_records(log.read(offset, 1 << 20).records):
            for r in records:
                got[r.offset] = r.value
            offset = h.next_offset
    assert got == appended
    for seg in log.segments()[:-1]:  # sealed: cut by their roll fsync
        assert file_size(seg) == seg.size == seg.allocated, seg
    active = log.segments()[-1]
    assert file_size(active) == active.allocated and tail_is_zeros(active)
    mark = read_flush_mark(directory)
    assert mark is not None and mark.position <= active.size  # logical, not the file's
    log.close()
    flusher.stop()
    for seg in log.segments():
        assert file_size(seg) == seg.size


def test_the_flush_mark_records_the_logical_end_not_the_file_size(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append_values(log, 20)
    active = log.segments()[-1]
    assert active.allocated > active.size
    mark = read_flush_mark(directory)
    assert mark is not None
    assert (mark.segment_base, mark.offset, mark.position) == (0, 20, active.size)
    log.close()


# -- truncation, DeleteRecords, retention, compaction with a window -----------------------


def test_truncate_to_inside_the_window_segment_then_crash_and_recover(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append_values(log, 30)
    active = log.segments()[-1]
    assert active.allocated > active.size
    log.truncate_to(20)
    assert file_size(active) == active.size == active.allocated  # the window went too
    more = values(10, tag=b"after-")
    for v in more:
        append_flushed(log, v)
    assert active.allocated > active.size and tail_is_zeros(active)  # a new window
    assert served(log) == values(20) + more
    log.close_unclean()
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory)
    assert log.offline_error is None
    assert served(log) == values(20) + more
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    log.close()


def test_truncate_back_into_a_rolled_segment_whose_cut_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A roll whose cut failed keeps the sealed segment (window and all) in the log's
    owed fsyncs; truncating back into it makes it the active segment again: its window
    is then the active segment's window (zeros after the logical end), appended over,
    and cut by the clean close; a clean restart trusts it."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append_values(log, 10)
    first = log.segments()[0]
    assert first.allocated > first.size
    cut_fails = faults.inject("segment.truncate", error=errno.EIO, match=first.log_path.name)
    with cut_fails, pytest.raises(OSError):
        log.roll()  # no flusher: the roll's fsync runs here and its cut fails
    assert len(log.segments()) == 2 and first.allocated > first.size
    log.append(batch(b"in-the-new-segment"))  # its flush cuts and syncs the first now
    log.truncate_to(10)  # back to the end of the first segment
    assert log.segments() == [first]
    more = values(5, tag=b"again-")
    for v in more:
        append_flushed(log, v)
    assert served(log) == values(10) + more
    log.close()
    assert file_size(first) == first.size
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory)
    assert log.offline_error is None and served(log) == values(10) + more
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    log.close()


def test_truncate_while_a_rolled_segment_still_has_its_window(tmp_path: Path) -> None:
    """The rolled segment's cut keeps failing; truncate_to lands inside it: the cut of
    truncate_bytes removes the window with the batches."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append_values(log, 10)
    first = log.segments()[0]
    cut_fails = faults.inject("segment.truncate", error=errno.EIO, match=first.log_path.name)
    with cut_fails, pytest.raises(OSError):
        log.roll()
    assert first.allocated > first.size
    log.truncate_to(5)
    assert log.segments() == [first]
    assert file_size(first) == first.size == first.allocated
    assert served(log) == values(5)
    log.close_unclean()
    log = open_log(directory)
    assert log.offline_error is None and served(log) == values(5)
    log.close()


def test_delete_records_and_retention_of_segments_with_windows(tmp_path: Path) -> None:
    clock = ManualClock()
    directory = tmp_path / "t-0"
    log = open_log(directory, 8 * 1024, clock=clock, retention_ms=60_000)
    written = append_values(log, 300)
    assert len(log.segments()) > 3
    active = log.segments()[-1]
    assert active.allocated > active.size
    start = log.segments()[2].base_offset
    assert log.delete_records_before(start) == start
    assert served(log) == written[start:]
    clock.advance(120_000)
    log.enforce_retention()  # rolls the expired active segment (window) and deletes all
    log.flush_future(log.log_end_offset - 1).result(timeout=30)
    assert log.log_start_offset == len(written)
    log.delete_expired_files()
    [left] = log.segments()
    assert file_size(left) == left.allocated
    more = values(5, tag=b"late-")
    for v in more:
        append_flushed(log, v)
    log.close_unclean()
    log = open_log(directory, 8 * 1024, clock=clock, retention_ms=60_000)
    assert log.offline_error is None and served(log) == more
    log.close()


def test_compaction_of_segments_cut_from_windows(tmp_path: Path) -> None:
    directory = tmp_path / "c-0"
    clock = ManualClock()
    log = open_log(directory, 4 * 1024, clock=clock, cleanup_policy="compact")
    latest: dict[bytes, bytes] = {}
    for i in range(200):
        key = b"k%d" % (i % 7)
        value = b"%s=%05d-" % (key, i) + b"x" * 60
        latest[key] = value
        append_flushed(log, value, key=key)
    assert log.segments()[-1].allocated > log.segments()[-1].size
    assert LogCleaner(clock).clean(log) is not None
    for seg in log.segments()[:-1]:
        assert file_size(seg) == seg.size
    kept = served(log)
    for key, value in latest.items():
        assert value in kept, key
    log.close_unclean()
    log = open_log(directory, 4 * 1024, clock=clock, cleanup_policy="compact")
    assert log.offline_error is None and served(log) == kept
    log.close()


# -- recovery ------------------------------------------------------------------------


def test_zero_tail_recovery_with_the_index_files_gone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Index files emptied (never fsynced, lost) beside a zero tail: the rebuilt indexes
    end at the last batch, not in the zeros, and lookups work after the cut."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    written = append_values(log, 200)
    active = log.segments()[-1]
    logical = active.size
    log.checkpoint()
    log.close_unclean()
    for suffix in (".index", ".timeindex"):
        for path in directory.glob("*" + suffix):
            path.write_bytes(b"")
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory)
    assert log.offline_error is None
    [seg] = log.segments()
    assert seg.size == logical == file_size(seg)
    assert seg.offset_index.values and max(seg.offset_index.values) < logical
    assert served(log) == written
    assert log.read(150, 1).records  # an index lookup in the middle
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    log.close()


def test_zeros_after_a_sealed_segment_and_an_empty_window_only_last_segment(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Flushed to its end while active, rolled, crash before the roll's cut: the sealed
    segment ends with zeros and the new (empty) last segment holds only its window.  Both
    tails are preallocated space (INFO); nothing acknowledged is lost."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    written = append_values(log, 20)
    first = log.segments()[0]
    log.roll()
    second = log.segments()[-1]
    log.checkpoint()
    log.close_unclean()
    with open(first.log_path, "r+b") as f:  # its cut was not durable
        f.seek(0, os.SEEK_END)
        f.write(bytes(200_000))
    with open(second.log_path, "r+b") as f:  # the window of the (empty) new segment
        f.write(bytes(100_000))
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory)
    assert log.offline_error is None, log.offline_error
    assert served(log) == written
    assert [file_size(s) for s in log.segments()] == [first.size, 0]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    log.close()


def test_a_short_zero_tail_smaller_than_a_batch_header(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A window capped by segment.bytes can leave fewer zero bytes than a batch header."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    written = append_values(log, 5)
    active = log.segments()[-1]
    log.close_unclean()
    os.truncate(active.log_path, active.size + 17)
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory)
    assert log.offline_error is None and served(log) == written
    assert file_size(log.segments()[-1]) == active.size
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    log.close()


def test_a_torn_batch_in_the_window_is_a_torn_write_not_zeros(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The first bytes of an unacknowledged batch reached the disk, the rest of the
    window is zeros: a tear above the bound (WARNING), the acknowledged prefix stays."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    written = append_values(log, 10)
    active = log.segments()[-1]
    end = active.size
    log.close_unclean()
    torn = batch(b"never-acknowledged" * 20)
    with open(active.log_path, "r+b") as f:
        f.seek(end)
        f.write(torn[: len(torn) // 2])
    log = open_log(directory)
    assert log.offline_error is None and served(log) == written
    assert "torn tail" in caplog.text
    log.close()


# -- the policy's bounds -------------------------------------------------------------


def test_windows_are_bounded_per_log_with_many_logs(tmp_path: Path) -> None:
    """One small acknowledged record per log: each log keeps at most one window; the
    disk cost is logs x window (the measured figure for 1000 partitions is in the
    review report)."""
    window = 16 * 1024
    preallocate.configure(window, budget_bytes=UNBOUNDED)
    logs = [open_log(tmp_path / f"t-{i}") for i in range(40)]
    for _ in range(3):
        for log in logs:
            append_flushed(log, b"x" * 100)
    extra = 0
    for log in logs:
        seg = log.segments()[-1]
        assert seg.allocated - seg.size <= window + preallocate.PAGE  # page-rounded end
        assert file_size(seg) == seg.allocated
        extra += file_size(seg) - seg.size
        assert log.size_bytes == seg.size  # reported sizes stay logical
    assert extra <= 40 * (window + preallocate.PAGE)
    for log in logs:
        log.close()
        assert file_size(log.segments()[-1]) == log.segments()[-1].size


def test_a_big_fsync_stream_writes_zeros_at_most_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A throughput stream (each fsync covers 256 KiB) must not write every byte twice:
    the zeros written over its life stay below one window."""
    zeros: list[int] = []
    real = LogSegment.zero_fill

    def counting(self: LogSegment, end: int) -> None:
        zeros.append(max(end - self.allocated, 0))
        real(self, end)

    monkeypatch.setattr(LogSegment, "zero_fill", counting)
    log = open_log(tmp_path / "t-0", 4 << 20)
    data = 0
    for i in range(48):
        value = b"%d-" % i + b"b" * (SMALL_FSYNC_BYTES * 4)
        append_flushed(log, value)
        data += len(value)
    assert len(log.segments()) > 1
    assert sum(zeros) <= DEFAULT_WINDOW_BYTES, (sum(zeros), data)
    log.close()


def test_zero_fills_through_an_fd_cache_of_one_descriptor(tmp_path: Path) -> None:
    """Two logs share one cached descriptor: every zero fill, append and read reopens
    the file the other evicted.  A window over 1 MiB is written as several buffers."""
    from riverbed.storage import fd_cache

    cache = fd_cache.shared()
    capacity = cache.capacity
    preallocate.configure(2 * DEFAULT_WINDOW_BYTES + 4096, budget_bytes=UNBOUNDED)
    fd_cache.configure_shared(1)
    try:
        logs = [open_log(tmp_path / f"t-{i}") for i in range(2)]
        written = values(30)
        for v in written:
            for log in logs:
                append_flushed(log, v)
        for log in logs:
            seg = log.segments()[-1]
            assert seg.allocated - seg.size > DEFAULT_WINDOW_BYTES
            assert file_size(seg) == seg.allocated and tail_is_zeros(seg)
            assert served(log) == written
            log.close()
            assert file_size(seg) == seg.size
    finally:
        fd_cache.configure_shared(capacity)
