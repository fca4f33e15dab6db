"""Pre-zeroed segment space (riverbed.storage.preallocate): logical end vs file size.

Real files, no OS patching: logs without a background flusher fsync in the caller, so
each ``flush_future(...).result()`` runs the flush and its zero-window step in the test's
thread.  Crash states are built by closing uncleanly and, where a state cannot be reached
through the log (a sealed segment whose truncate was not durable), by writing zeros after
the last batch the way the zero window leaves them.
"""

from __future__ import annotations

import errno
import gc
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _prealloc import BIG, UNBOUNDED, append_flushed, append_values, file_size, open_log, values

from riverbed.storage import faults, preallocate
from riverbed.storage.preallocate import DEFAULT_WINDOW_BYTES, SMALL_FSYNC_BYTES, ZeroWindow
from riverbed.testing.log_contents import served_values as served


@pytest.fixture(autouse=True)
def _default_window() -> Iterator[None]:
    # The default window, and a budget no other test's logs can have used up: in one
    # pytest process the logs of earlier tests (brokers still running, logs dropped
    # without a close and not yet collected) hold their zeros against the same budget.
    preallocate.configure(DEFAULT_WINDOW_BYTES, budget_bytes=UNBOUNDED)
    yield
    preallocate.configure(DEFAULT_WINDOW_BYTES)


def test_small_fsynced_appends_keep_a_zero_window_reads_never_see_it(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    written = append_values(log, 50)
    active = log.segments()[-1]
    assert active.allocated >= active.size + DEFAULT_WINDOW_BYTES // 2
    assert file_size(active) == active.allocated
    with open(active.log_path, "rb") as f:
        f.seek(active.size)
        tail = f.read()
    assert tail and tail.count(0) == len(tail)  # zeros only past the logical end
    # reads stop at the logical end: every batch, then nothing (a Fetch at the end)
    assert served(log) == written
    end = log.read(log.log_end_offset, 1 << 20)
    assert end.records == b""
    # a read that asks for more than is there stops at the last batch
    whole = log.read(0, 1 << 24).records
    assert len(whole) == active.size and whole.count(0) < len(whole)
    # sizes (DescribeLogDirs, retention.bytes) are logical
    assert log.size_bytes == active.size
    # scans end at the logical end
    positions = [pos for pos, _h in active.scan(0)]
    assert len(positions) == len(written)
    log.close()


def test_a_big_batch_stream_gets_no_window(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for i in range(12):
        append_flushed(log, b"%d" % i + b"b" * (SMALL_FSYNC_BYTES * 2))
    active = log.segments()[-1]
    assert active.allocated == active.size == file_size(active)
    log.close()


def test_the_policy_follows_the_bytes_per_fsync() -> None:
    window = ZeroWindow()
    assert not window.wanted  # nothing seen yet
    position = 0
    for _ in range(10):
        position += 2600
        window.flushed(0, position)
    assert window.wanted
    assert (
        window.plan(position, position, BIG) == -(-(position + DEFAULT_WINDOW_BYTES) // 4096) * 4096
    )
    assert window.plan(position, position + DEFAULT_WINDOW_BYTES, BIG) == 0  # enough left
    assert window.plan(100, 0, 50_000) == 50_000  # never past segment.bytes
    for _ in range(40):
        position += 1 << 20
        window.flushed(0, position)
    assert not window.wanted and window.plan(position, position, BIG) == 0
    small = ZeroWindow()
    small.flushed(0, 100)
    preallocate.configure(0)
    assert not small.wanted  # the broker setting turns it off


def test_roll_cuts_the_sealed_segment_to_its_logical_end(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    append_values(log, 20)
    sealed = log.segments()[-1]
    assert sealed.allocated > sealed.size
    log.roll()  # no flusher: the roll's fsync (and cut) runs in this call
    assert file_size(sealed) == sealed.size == sealed.allocated
    append_values(log, 5)
    assert served(log) == values(20) + values(5)
    log.close()


def test_clean_close_cuts_the_window_and_the_restart_trusts_file_sizes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=8 * 1024)
    written = append_values(log, 200)
    sizes = {s.log_path.name: s.size for s in log.segments()}
    assert len(sizes) > 2
    log.close()
    for name, size in sizes.items():
        assert os.path.getsize(directory / name) == size, name
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory, segment_bytes=8 * 1024)
    assert not [s for s in log.segments()[:-1] if s.indexes_loaded]  # opened lazily
    assert "preallocated" not in caplog.text
    assert served(log) == written
    log.close()


def test_kill_leaves_a_zero_tail_recovery_cuts_it_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    written = append_values(log, 30)
    active = log.segments()[-1]
    logical, allocated = active.size, active.allocated
    assert allocated > logical
    log.close_unclean()  # a crash: the window stays in the file
    assert os.path.getsize(active.log_path) == allocated
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory)
    assert log.offline_error is None
    assert served(log) == written
    assert os.path.getsize(active.log_path) == logical
    assert "preallocated zeros" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    append_flushed(log, b"after")
    assert served(log)[-1] == b"after"
    log.close()


def _two_segments_with_zero_tail(directory: Path, *, gap: bool) -> tuple[Path, int]:
    """seg 0 sealed and cut by its roll, seg 1 active; then seg 0 gets zeros after its
    batches again, as when the crash came before its roll truncate was durable.  With
    ``gap`` its last batch is replaced by zeros too (a write that never reached the
    disk).  Returns seg 0's path and its logical size before."""
    log = open_log(directory)
    append_values(log, 10)
    log.roll()
    append_values(log, 5)
    log.checkpoint()
    first = log.segments()[0]
    path, size = first.log_path, first.size
    last_batch = [pos for pos, _h in first.scan(0)][-1]
    log.close_unclean()
    if gap:
        os.truncate(path, last_batch)
    with open(path, "r+b") as f:
        f.seek(0, os.SEEK_END)
        f.write(bytes(300_000))
    return path, size


@pytest.mark.parametrize("bound", ["covered", "lost"])
def test_a_sealed_zero_tail_contiguous_with_the_next_segment_keeps_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, bound: str
) -> None:
    directory = tmp_path / "t-0"
    path, size = _two_segments_with_zero_tail(directory, gap=False)
    if bound == "lost":  # no checkpoint, no mark: every segment is checked as above it
        (directory / "partition.checkpoint").unlink()
        (directory / "flushed.mark").unlink(missing_ok=True)
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = open_log(directory)
    assert log.offline_error is None, log.offline_error
    assert served(log) == values(10) + values(5)
    assert os.path.getsize(path) == size
    assert len(log.segments()) == 2
    assert "preallocated zeros" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    log.close()


def test_a_sealed_zero_tail_with_an_offset_gap_is_a_tear_above_the_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "t-0"
    _two_segments_with_zero_tail(directory, gap=True)
    (directory / "partition.checkpoint").unlink()
    (directory / "flushed.mark").unlink(missing_ok=True)
    log = open_log(directory)
    assert log.offline_error is None
    assert served(log) == values(9)  # today's rule: the later segment goes
    assert len(log.segments()) == 1
    assert "torn tail" in caplog.text
    log.close()


def test_a_sealed_zero_tail_with_an_offset_gap_below_the_bound_is_corruption(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "t-0"
    _two_segments_with_zero_tail(directory, gap=True)
    log = open_log(directory)
    assert log.offline_error is not None  # acknowledged data is missing: never cut


def test_zeros_where_the_mark_says_data_was_fsynced_are_corruption(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    append_values(log, 10)
    active = log.segments()[-1]
    last_batch = [pos for pos, _h in active.scan(0)][-1]
    log.close_unclean()
    with open(active.log_path, "r+b") as f:  # an fsynced batch reads as zeros
        f.seek(last_batch)
        f.write(bytes(active.size - last_batch))
    log = open_log(directory)
    assert log.offline_error is not None


def test_the_broker_setting_names_the_window() -> None:
    from riverbed.broker.config import BrokerConfig
    from riverbed.errors import ConfigError

    assert BrokerConfig().zero_window_bytes == DEFAULT_WINDOW_BYTES  # on by default
    off = BrokerConfig.from_props({"riverbed.log.zero.window.bytes": "0"})
    assert off.zero_window_bytes == 0
    with pytest.raises(ConfigError, match=r"riverbed\.log\.zero\.window\.bytes"):
        BrokerConfig.from_props({"riverbed.log.zero.window.bytes": "-1"})


def test_a_failed_zero_fill_leaves_no_window_and_appends_go_on(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    with faults.inject("segment.zero_fill", error=errno.ENOSPC) as fault:
        append_values(log, 10)
    assert fault.hits >= 1
    assert served(log) == values(10)
    log.close()
    assert os.path.getsize(log.segments()[-1].log_path) == log.segments()[-1].size


def test_the_process_budget_bounds_the_zeros_all_logs_hold(tmp_path: Path) -> None:
    """Many small-fsync logs do not each keep a window: past the budget their fsyncs are
    appends again (still correct); a clean close gives its share back."""
    gc.collect()  # dropped logs of earlier tests give their shares back now, not mid-test
    before = preallocate.held_bytes()  # other logs of this process (earlier tests' brokers)
    preallocate.configure(DEFAULT_WINDOW_BYTES, budget_bytes=before + 3 * DEFAULT_WINDOW_BYTES)
    logs = [open_log(tmp_path / f"t-{i}") for i in range(6)]
    try:
        for log in logs:
            append_values(log, 3)
        windows = [log.segments()[-1].allocated - log.segments()[-1].size for log in logs]
        assert sum(1 for w in windows if w > 0) == 2  # each full window is ~1 MiB + a page
        assert preallocate.held_bytes() - before <= 3 * DEFAULT_WINDOW_BYTES
        assert preallocate.held_bytes() - before == sum(windows)
        for log in logs:  # every log serves exactly what it was given
            assert served(log) == values(3)
        holder = next(log for log, w in zip(logs, windows, strict=True) if w > 0)
        holder.close()
        logs.remove(holder)
        assert preallocate.held_bytes() - before == sum(windows) - max(windows)
        waiting = next(
            log for log in logs if log.segments()[-1].allocated == log.segments()[-1].size
        )
        append_flushed(waiting, b"more")  # the freed share goes to the next log that flushes
        assert waiting.segments()[-1].allocated > waiting.segments()[-1].size
    finally:
        for log in logs:
            log.close()


def test_the_window_setting_has_a_maximum() -> None:
    from riverbed.broker.config import BrokerConfig
    from riverbed.errors import ConfigError

    with pytest.raises(ConfigError, match="above the maximum"):
        BrokerConfig.from_props({"riverbed.log.zero.window.bytes": str(1 << 30)})
    config = BrokerConfig.from_props({"riverbed.log.zero.window.total.bytes": "0"})
    assert config.zero_window_total_bytes == 0


def test_a_crashed_or_deleted_log_gives_its_share_back(tmp_path: Path) -> None:
    """close_unclean (a crash in tests) and a deletion release the descriptors without
    the clean close's cut; the zeros they held count against the budget no more."""
    gc.collect()
    before = preallocate.held_bytes()
    crashed, deleted = open_log(tmp_path / "t-0"), open_log(tmp_path / "t-1")
    for log in (crashed, deleted):
        append_flushed(log, b"v")
    windows = [log.segments()[-1].allocated - log.segments()[-1].size for log in (crashed, deleted)]
    assert min(windows) > 0 and preallocate.held_bytes() - before == sum(windows)
    crashed.close_unclean()
    assert preallocate.held_bytes() - before == windows[1]
    deleted.begin_deletion()
    deleted.close_for_deletion()
    assert preallocate.held_bytes() == before
