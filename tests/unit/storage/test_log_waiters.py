"""PartitionLog flush waiters: a cancelled waiter (a client that went away) is skipped and
never strands the others, whichever path resolves or fails them (issue 15.1)."""

from __future__ import annotations

import errno
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
from _batches import batch

from riverbed.clock import ManualClock
from riverbed.errors import LogClosedError, OffsetOutOfRangeError, StorageError
from riverbed.storage import LogConfig, PartitionLog, faults
from riverbed.storage.flusher import GroupCommitFlusher

# Interval policy without a flusher thread: flush_future queues a waiter and nothing
# resolves it until an explicit flush / roll / truncate / close.
INTERVAL = LogConfig(flush_messages=1_000_000, flush_ms=3_600_000)


def open_log(tmp_path: Path, config: LogConfig = INTERVAL) -> PartitionLog:
    return PartitionLog.open(tmp_path / "t-0", config, clock=ManualClock())


def waiters(log: PartitionLog, n: int) -> list[Future[None]]:
    futures = []
    for i in range(n):
        result = log.append(batch(b"v%d" % i))
        futures.append(log.flush_future(result.last_offset))
    assert not any(f.done() for f in futures)
    return futures


def test_flush_skips_a_cancelled_waiter_and_resolves_the_others(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    futures = waiters(log, 5)
    assert futures[0].cancel() and futures[2].cancel()
    assert log.flush() == 5  # used to raise InvalidStateError: CANCELLED
    for i in (1, 3, 4):
        assert futures[i].result(timeout=0) is None
    # nothing is left queued: a later flush has no stale waiter to trip on
    later = log.flush_future(log.append(batch(b"x")).last_offset)
    later.cancel()
    log.flush()
    log.close()


def test_a_waiter_cancelled_after_queueing_does_not_block_later_flushes(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    first = waiters(log, 1)[0]
    first.cancel()
    second = waiters(log, 1)[0]
    log.flush()
    assert second.result(timeout=0) is None
    log.close()


def test_roll_skips_a_cancelled_waiter(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    futures = waiters(log, 3)
    futures[1].cancel()
    log.roll()  # the rolled segment is made durable; its waiters resolve once it is
    log.flush()
    assert futures[0].result(timeout=5) is None and futures[2].result(timeout=5) is None
    log.close()


def test_close_with_a_cancelled_waiter_completes(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    futures = waiters(log, 3)
    futures[0].cancel()
    log.close()  # used to raise InvalidStateError half-way (DeleteTopics)
    assert futures[1].result(timeout=0) is None and futures[2].result(timeout=0) is None
    reopened = open_log(tmp_path)  # the close was complete: clean shutdown, nothing lost
    assert reopened.log_end_offset == 3 and reopened.flushed_offset == 3
    reopened.close()


def test_close_fails_pending_waiters_past_a_cancelled_one(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    futures = waiters(log, 2)
    # waiters for offsets the close does not cover (never appended) are failed
    beyond = [log.flush_future(10 + i) for i in range(3)]
    beyond[0].cancel()
    log.close()
    assert all(f.result(timeout=0) is None for f in futures)
    for f in beyond[1:]:
        with pytest.raises(LogClosedError):
            f.result(timeout=0)


def test_truncate_fails_cancelled_and_live_waiters_alike(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    futures = waiters(log, 4)
    futures[2].cancel()
    log.truncate_to(1)
    for f in (futures[1], futures[3]):
        with pytest.raises(OffsetOutOfRangeError):
            f.result(timeout=0)
    log.flush()
    assert futures[0].result(timeout=0) is None
    log.close()


def test_failed_fsync_fails_the_others_past_a_cancelled_one(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    futures = waiters(log, 3)
    futures[0].cancel()
    with faults.inject("segment.fsync", error=errno.EIO), pytest.raises(OSError):
        log.flush()
    for f in futures[1:]:
        assert isinstance(f.exception(timeout=0), StorageError)
    log.close()


def test_interval_flusher_keeps_its_interval_after_a_flush(tmp_path: Path) -> None:
    """Under flush.ms the flusher used to sleep a full second after each interval flush,
    so an acks=-1 wait took ~1 s whatever flush.ms said."""
    flusher = GroupCommitFlusher()
    flusher.start()
    log = PartitionLog.open(
        tmp_path / "t-0",
        LogConfig(flush_messages=1_000_000, flush_ms=50),
        clock=ManualClock(),
        flusher=flusher,
    )
    try:
        for i in range(4):
            started = time.monotonic()
            log.flush_future(log.append(batch(b"v%d" % i)).last_offset).result(timeout=5)
            assert time.monotonic() - started < 0.5, f"wait {i} took too long"
    finally:
        log.close()
        flusher.stop()


def _open_fds_under(directory: Path) -> list[str]:
    fds = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if target.startswith(str(directory)):
            fds.append(target)
    return fds


def _snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.iterdir()}


def test_close_for_deletion_fails_waiters_and_writes_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(b"first"))
    log.roll()  # two segments (no flusher: the roll's fsync is done inline)
    futures = [*waiters(log, 3), log.flush_future(100)]  # beyond the end, too
    futures[1].cancel()
    directory = tmp_path / "t-0"
    before = _snapshot(directory)
    assert _open_fds_under(directory)
    log.close_for_deletion()
    for i, f in enumerate(futures):
        if i == 1:
            assert f.cancelled()
        else:
            assert isinstance(f.exception(timeout=0), LogClosedError)
            assert "t-0 was deleted" in str(f.exception(timeout=0))
    assert _snapshot(directory) == before  # no marker, checkpoint, snapshot, index or mark
    assert not (directory / ".clean_shutdown").exists()
    assert not _open_fds_under(directory)
    with pytest.raises(LogClosedError):
        log.append(batch(b"late"))
    with pytest.raises(LogClosedError):
        log.flush_future(100)
    log.close_for_deletion()  # idempotent
    log.close()  # and a later close is a no-op


def test_close_for_deletion_of_an_offline_or_empty_log(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.close_for_deletion()
    assert not _open_fds_under(tmp_path / "t-0")


def test_failed_fsync_names_the_file_and_the_errno(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    (fut,) = waiters(log, 1)
    with faults.inject("segment.fsync", error=errno.ENOSPC), pytest.raises(OSError):
        log.flush()
    message = str(fut.exception(timeout=0))
    path = log.segments()[-1].log_path
    assert message.startswith(f"fsync of {path} failed: no space left on device"), message
    assert message.endswith("(ENOSPC)") and "\n" not in message, message
    log.close()


def test_failed_index_write_fails_the_waiters_instead_of_stranding_them(tmp_path: Path) -> None:
    log = open_log(
        tmp_path, LogConfig(flush_messages=1_000_000, flush_ms=3_600_000, index_interval_bytes=1)
    )
    futures = waiters(log, 3)
    futures[0].cancel()
    with faults.inject("index.flush", error=errno.ENOSPC), pytest.raises(OSError):
        log.flush()
    for f in futures[1:]:
        message = str(f.exception(timeout=0))
        assert "writing the indexes of" in message and "(ENOSPC)" in message, message
    assert log.flushed_offset == 0
    assert log.flush() == 3  # the disk is back; the data was never lost
    log.close()


def test_close_fails_the_waiters_when_it_cannot_finish(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    (fut,) = waiters(log, 1)
    with faults.inject("segment.fsync", error=errno.ENOSPC), pytest.raises(OSError):
        log.close()
    message = str(fut.exception(timeout=0))
    assert message.startswith(f"closing {tmp_path / 't-0'} failed: no space left on device")
    log.close_unclean()
    assert not (tmp_path / "t-0" / ".clean_shutdown").exists()


def test_close_for_deletion_fails_the_waiters_even_if_a_close_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path)
    log.append(batch(b"first"))
    log.roll()
    futures = waiters(log, 2)
    first, second = log.segments()

    def failing_close() -> None:
        raise OSError(errno.EIO, "injected close failure")

    monkeypatch.setattr(first, "close", failing_close)
    with pytest.raises(OSError):
        log.close_for_deletion()
    assert all(isinstance(f.exception(timeout=0), LogClosedError) for f in futures)
    assert not _open_fds_under(second.log_path)  # the other segments were still closed
    with pytest.raises(LogClosedError):
        log.append(batch(b"late"))


def test_begin_deletion_stops_background_writes_before_the_directory_moves(
    tmp_path: Path,
) -> None:
    # DeleteTopics renames the directory before it releases the log; the flusher thread's
    # checkpoint in between must not reach for the old path (FileNotFoundError).
    plog = PartitionLog.open(tmp_path / "t-0", LogConfig())
    plog.append(batch(b"v"))
    plog.begin_deletion()
    moved = tmp_path / "t-0.x-delete"
    (tmp_path / "t-0").rename(moved)
    plog.checkpoint()  # a no-op now, not FileNotFoundError
    assert plog.flush() >= 0
    assert plog.delete_expired_files() == 0
    with pytest.raises(LogClosedError):
        plog.append(batch(b"w"))
    plog.close_for_deletion()
    assert not (tmp_path / "t-0").exists()  # nothing wrote under the old path
    assert not (moved / ".clean_shutdown").exists()
