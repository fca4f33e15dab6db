"""Storage under injected disk failures, through the named failure points of
:mod:`riverbed.storage.faults` (no patching of ``os``)."""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.clock import ManualClock
from riverbed.errors import StorageError
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.storage import LogConfig, PartitionLog, faults
from riverbed.storage.checkpoint import (
    PartitionCheckpoint,
    read_checkpoint,
    write_checkpoint,
)
from riverbed.storage.flusher import GroupCommitFlusher

INTERVAL = LogConfig(flush_messages=1_000_000, flush_ms=3_600_000)


def one(value: bytes) -> bytes:
    return build_batch([(None, value, 1_700_000_000_000)])


def values(log: PartitionLog) -> list[bytes | None]:
    out: list[bytes | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        for h, rs in iter_batches_with_records(data):
            out.extend(r.value for r in rs if r.offset >= offset)
            offset = h.next_offset
    return out


@pytest.fixture(autouse=True)
def nothing_left_armed() -> Iterator[None]:
    yield
    assert faults.armed_points() == []


def open_log(path: Path, config: LogConfig = INTERVAL, **kw: object) -> PartitionLog:
    return PartitionLog.open(path, config, clock=ManualClock(), **kw)  # type: ignore[arg-type]


# -- the registry itself ----------------------------------------------------------------


def test_unknown_point_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown failure point"), faults.inject("segment.fsynk"):
        pass


def test_match_and_times_select_the_calls(tmp_path: Path) -> None:
    with faults.inject("dir.fsync", error=errno.EIO, match="b-dir", times=1) as fault:
        (tmp_path / "a-dir").mkdir()
        (tmp_path / "b-dir").mkdir()
        from riverbed.storage.atomic_file import fsync_dir

        fsync_dir(tmp_path / "a-dir")  # not matched
        with pytest.raises(OSError) as info:
            fsync_dir(tmp_path / "b-dir")
        assert info.value.errno == errno.EIO and "dir.fsync" in str(info.value)
        fsync_dir(tmp_path / "b-dir")  # times=1: only the first
    assert fault.hits == 1 and fault.paths == [str(tmp_path / "b-dir")]


def test_exit_disarms_and_releases_a_blocked_caller(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    log.append(one(b"a"))
    done = threading.Event()

    def flush() -> None:
        log.flush()
        done.set()

    with faults.inject("segment.fsync", block=True) as fault:
        worker = threading.Thread(target=flush, daemon=True)
        worker.start()
        assert fault.wait_reached()
        assert not done.wait(0.2)
    assert done.wait(10), "leaving the with block must release the blocked fsync"
    assert log.flushed_offset == 1
    log.close()


# -- segment.write ------------------------------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_failed_write_is_cut_back_and_the_log_goes_on(tmp_path: Path, code: int) -> None:
    log = open_log(tmp_path / "t-0")
    log.append(one(b"a"))
    size = log.segments()[-1].size
    with faults.inject("segment.write", error=code) as fault, pytest.raises(StorageError):
        log.append(one(b"b"))
    assert fault.hits == 1
    segment = log.segments()[-1]
    assert segment.size == size == segment.log_path.stat().st_size
    assert log.log_end_offset == 1  # no offset was consumed
    assert log.append(one(b"c")).base_offset == 1
    assert values(log) == [b"a", b"c"]
    log.close()
    reopened = open_log(tmp_path / "t-0")
    assert values(reopened) == [b"a", b"c"]
    reopened.close()


# -- segment.fsync ------------------------------------------------------------------------


def test_failed_fsync_fails_the_waiters_and_does_not_advance(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    waiters = [log.flush_future(log.append(one(b"%d" % i)).last_offset) for i in range(3)]
    waiters[0].cancel()  # a client that went away meanwhile (issue 15.1)
    with faults.inject("segment.fsync", error=errno.EIO), pytest.raises(OSError):
        log.flush()
    for fut in waiters[1:]:
        assert isinstance(fut.exception(timeout=0), StorageError)
    assert log.flushed_offset == 0
    assert log.flush() == 3  # the disk is back
    log.close()


def test_blocked_fsync_holds_acks_until_released(tmp_path: Path) -> None:
    flusher = GroupCommitFlusher()
    flusher.start()
    log = open_log(tmp_path / "t-0", LogConfig(), flusher=flusher)
    try:
        with faults.inject("segment.fsync", block=True) as fsync:
            fut = log.flush_future(log.append(one(b"a")).last_offset)
            assert fsync.wait_reached()
            # appends go on while the fsync is held; their acks wait
            later = log.flush_future(log.append(one(b"b")).last_offset)
            time.sleep(0.2)
            assert not fut.done() and not later.done()
            fsync.release()
            fut.result(timeout=10)
            later.result(timeout=10)
        assert log.flushed_offset == 2
    finally:
        log.close()
        flusher.stop()


# -- index.flush, segment.truncate, log.roll ----------------------------------------------


def test_failed_index_flush_fails_the_flush_not_the_data(tmp_path: Path) -> None:
    log = open_log(
        tmp_path / "t-0",
        LogConfig(flush_messages=1_000_000, flush_ms=3_600_000, index_interval_bytes=1),
    )
    for i in range(5):
        log.append(one(b"%d" % i))
    with faults.inject("index.flush", error=errno.ENOSPC), pytest.raises(OSError):
        log.flush()
    assert log.flushed_offset == 0
    log.flush()
    assert log.flushed_offset == 5
    log.close()


def test_failed_truncate_leaves_the_log_readable(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for i in range(4):
        log.append(one(b"%d" % i))
    with faults.inject("segment.truncate", error=errno.EIO), pytest.raises(OSError):
        log.truncate_to(2)
    log.close_unclean()
    reopened = open_log(tmp_path / "t-0")
    assert values(reopened) in ([b"0", b"1", b"2", b"3"], [b"0", b"1"])
    reopened.truncate_to(2)
    assert values(reopened) == [b"0", b"1"]
    reopened.close()


def test_failed_roll_refuses_the_append_and_keeps_the_log(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=200))
    log.append(one(b"x" * 120))
    with faults.inject("log.roll", error=errno.ENOSPC), pytest.raises(StorageError):
        log.append(one(b"y" * 120))  # needs a roll
    assert len(log.segments()) == 1 and log.log_end_offset == 1
    log.append(one(b"z" * 120))  # the roll works again
    assert len(log.segments()) == 2
    assert values(log) == [b"x" * 120, b"z" * 120]
    log.close()


def test_append_that_rolls_does_not_wait_for_the_old_segments_fsync(tmp_path: Path) -> None:
    """Issue 17.2: a roll seals and opens under the log's lock; the old segment's fsync
    (and snapshot, directory fsync) is the flusher's, and nothing claims the old segment
    durable before it is done."""
    flusher = GroupCommitFlusher()
    flusher.start()
    log = open_log(tmp_path / "t-0", LogConfig(segment_bytes=200), flusher=flusher)
    try:
        log.flush_future(log.append(one(b"x" * 120)).last_offset).result(timeout=10)
        flushed = log.flushed_offset
        # a disk that takes as long as the test wants: the fsync is held until released
        with faults.inject("segment.fsync", block=True, match=".log") as slow:
            started = time.monotonic()
            worker = threading.Thread(target=lambda: log.append(one(b"y" * 120)), daemon=True)
            worker.start()
            worker.join(5)
            assert not worker.is_alive(), "the rolling append waited for an fsync"
            assert time.monotonic() - started < 5
            assert len(log.segments()) == 2
            assert slow.wait_reached(), "the flusher never started the rolled segment's fsync"
            assert slow.paths[0].endswith("00000000000000000000.log")  # the old segment
            # meanwhile nothing claims the new record (nor the old segment) durable:
            # flushed_offset is what waiters, checkpoints and flushed.mark are given
            waiter = log.flush_future(1)
            assert log.flushed_offset == flushed == 1 and not waiter.done()
            assert read_checkpoint(log.directory).recovery_point <= 1
            # a read and another append go on while the flusher sits in the fsync
            assert log.read(0, 1 << 20).records
            log.append(one(b"z"))
            time.sleep(0.1)
            assert not waiter.done()
            assert log.producers.snapshot_offsets() == []  # a roll's snapshot follows its fsync
            slow.release()
            waiter.result(timeout=10)
        assert log.flushed_offset >= 2
        # written after the fsync ("z" may have rolled too: its snapshot, at 2, may follow)
        assert log.producers.snapshot_offsets()[:1] == [1]
    finally:
        log.close()
        flusher.stop()


def test_without_a_flusher_roll_fsyncs_in_the_caller_after_the_lock(tmp_path: Path) -> None:
    log = open_log(
        tmp_path / "t-0", LogConfig(segment_bytes=200, flush_messages=10**9, flush_ms=10**12)
    )
    log.append(one(b"x" * 120))
    with faults.inject("segment.fsync") as fsync:
        log.append(one(b"y" * 120))  # rolls; no flusher: the caller pays the fsync
    assert fsync.hits >= 1 and log.flushed_offset >= 1
    log.close()


def test_a_slow_checkpoint_write_does_not_block_appends(tmp_path: Path) -> None:
    """The flusher writes the checkpoint (two fsyncs) every second; appends and reads,
    which the event loop makes, must not wait for that disk."""
    log = open_log(tmp_path / "t-0")
    log.append(one(b"a"))
    log.flush()
    with faults.inject("file.fsync", block=True, match="partition.checkpoint") as slow:
        writer = threading.Thread(target=log.checkpoint, daemon=True)
        writer.start()
        assert slow.wait_reached()
        appender = threading.Thread(target=lambda: log.append(one(b"b")), daemon=True)
        appender.start()
        appender.join(5)
        assert not appender.is_alive(), "an append waited for a checkpoint's fsync"
        assert values(log) == [b"a", b"b"]
        slow.release()
        writer.join(10)
    assert read_checkpoint(log.directory).recovery_point == 1
    log.close()


def test_a_slow_checkpoint_write_does_not_block_a_flush(tmp_path: Path) -> None:
    """The checkpoint's write holds its own lock, not the flush lock: an fsync asked for
    meanwhile (a produce with acks=all) runs at once (on the io_uring in the broker,
    which a held flush lock would send to a helper thread) instead of waiting for the
    checkpoint's two fsyncs."""
    log = open_log(tmp_path / "t-0")
    log.append(one(b"a"))
    log.flush()
    log.append(one(b"b"))
    with faults.inject("file.fsync", block=True, match="partition.checkpoint") as slow:
        writer = threading.Thread(target=log.checkpoint, daemon=True)
        writer.start()
        assert slow.wait_reached()
        flusher = threading.Thread(target=log.flush, daemon=True)
        flusher.start()
        flusher.join(5)
        assert not flusher.is_alive(), "a flush waited for a checkpoint's fsync"
        assert log.flushed_offset == 2
        slow.release()
        writer.join(10)
    # The checkpoint in flight took its recovery point before the flush: never above it.
    assert read_checkpoint(log.directory).recovery_point == 1
    log.checkpoint()
    assert read_checkpoint(log.directory).recovery_point == 2
    log.close()


def test_delete_records_waits_for_a_checkpoint_in_flight(tmp_path: Path) -> None:
    """A checkpoint taken before DeleteRecords must not land after it: the older log
    start offset would bring the deleted records back at the next start."""
    log = open_log(tmp_path / "t-0")
    for v in (b"a", b"b", b"c"):
        log.append(one(v))
    log.flush()
    with faults.inject("file.fsync", block=True, match="partition.checkpoint", times=1) as slow:
        writer = threading.Thread(target=log.checkpoint, daemon=True)
        writer.start()
        assert slow.wait_reached()
        deleter = threading.Thread(target=lambda: log.delete_records_before(2), daemon=True)
        deleter.start()
        deleter.join(0.5)
        assert deleter.is_alive(), "DeleteRecords wrote its checkpoint under one in flight"
        slow.release()
        writer.join(10)
        deleter.join(10)
        assert not deleter.is_alive()
    assert read_checkpoint(log.directory).log_start_offset == 2
    log.close_unclean()
    reopened = open_log(tmp_path / "t-0")
    assert values(reopened) == [b"c"]
    reopened.close()


# -- file.rename, file.fsync, dir.fsync (checkpoints) ---------------------------------------


@pytest.mark.parametrize("point", ["file.fsync", "file.rename", "dir.fsync"])
def test_failed_checkpoint_write_keeps_the_old_checkpoint(tmp_path: Path, point: str) -> None:
    tmp_path.mkdir(exist_ok=True)
    write_checkpoint(tmp_path, PartitionCheckpoint(10, 5, 5))
    with faults.inject(point, error=errno.EIO), pytest.raises(OSError):
        write_checkpoint(tmp_path, PartitionCheckpoint(20, 6, 6))
    got = read_checkpoint(tmp_path)
    # before the rename the old one stands; a failed directory fsync comes after it
    assert got == (
        PartitionCheckpoint(20, 6, 6) if point == "dir.fsync" else PartitionCheckpoint(10, 5, 5)
    )
