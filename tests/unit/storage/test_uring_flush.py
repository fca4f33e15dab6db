"""Acknowledgement fsyncs through io_uring, completed on the event loop
(riverbed.storage.uring; PartitionLog.flush_on_ring; GroupCommitFlusher.attach_ring).

Real rings on a real file system where the kernel allows them (skipped where it does
not: the helper threads then do the work, which the rest of the suite covers)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import platform
import select
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from _batches import batch

from riverbed.broker.config import BrokerConfig
from riverbed.errors import ConfigError, StorageError
from riverbed.storage import LogConfig, PartitionLog, faults, io_uring_abi, preallocate
from riverbed.storage.flush_mark import FlushMark, read_flush_mark
from riverbed.storage.flusher import GroupCommitFlusher
from riverbed.storage.uring import FsyncRing

WAIT_S = 30.0


class LoopThread:
    """An asyncio loop on its own thread, as the broker's."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on the loop thread; its result."""
        done: Future[Any] = Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:
                done.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return done.result(WAIT_S)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT_S)
        self.loop.close()


@pytest.fixture
def loop() -> Iterator[LoopThread]:
    runner = LoopThread()
    try:
        yield runner
    finally:
        runner.stop()


@pytest.fixture
def ring(loop: LoopThread) -> Iterator[FsyncRing]:
    opened = loop.call(lambda: FsyncRing.open(asyncio.get_running_loop()))
    if opened is None:
        pytest.skip("io_uring is not available here (not Linux x86_64, or the kernel refuses)")
    try:
        yield opened
    finally:
        opened.close()


def test_an_fdatasync_completes_on_the_loop(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    fd = os.open(tmp_path / "f", os.O_CREAT | os.O_WRONLY, 0o644)
    got: Future[tuple[int, bool]] = Future()
    try:
        os.write(fd, b"x" * 4096)
        loop.call(
            lambda: ring.fdatasync(
                fd, lambda res: got.set_result((res, threading.current_thread() is loop.thread))
            )
        )
        assert got.result(WAIT_S) == (0, True)
    finally:
        os.close(fd)


def test_a_failed_fdatasync_reports_minus_errno(loop: LoopThread, ring: FsyncRing) -> None:
    read_end, write_end = os.pipe()  # a pipe cannot be synced: EINVAL
    got: Future[int] = Future()
    try:
        loop.call(lambda: ring.fdatasync(read_end, got.set_result))
        assert got.result(WAIT_S) == -errno.EINVAL
    finally:
        os.close(read_end)
        os.close(write_end)


def test_drain_answers_what_is_in_flight_after_the_loop_stopped(tmp_path: Path) -> None:
    runner = LoopThread()
    opened = runner.call(lambda: FsyncRing.open(asyncio.get_running_loop()))
    if opened is None:
        runner.stop()
        pytest.skip("io_uring is not available here")
    fd = os.open(tmp_path / "f", os.O_CREAT | os.O_WRONLY, 0o644)
    got: Future[int] = Future()
    try:

        def submit_then_stop() -> None:
            opened.fdatasync(fd, got.set_result)
            asyncio.get_running_loop().stop()  # before the completion can be read there

        runner.loop.call_soon_threadsafe(submit_then_stop)
        runner.thread.join(WAIT_S)
        opened.close()  # drains on this thread
        assert got.result(0) == 0
    finally:
        os.close(fd)
        runner.loop.close()


@contextlib.contextmanager
def _ring_log(
    tmp_path: Path, ring: FsyncRing, config: LogConfig | None = None
) -> Iterator[tuple[PartitionLog, GroupCommitFlusher]]:
    """A log on a flusher with ``ring`` attached; at exit the ring is attached again (a
    test may have swapped in a FakeRing), the flusher stopped and the log closed."""
    # no periodic checkpoint: one holding _flush_lock would send a flush to a helper
    flusher = GroupCommitFlusher(checkpoint_interval_ms=3_600_000)
    flusher.start()
    flusher.attach_ring(ring)
    log = PartitionLog.open(tmp_path / "t-0", config or LogConfig(), flusher=flusher)
    try:
        yield log, flusher
    finally:
        flusher.attach_ring(ring)
        flusher.stop()
        log.close()


def _acked(loop: LoopThread, log: PartitionLog, value: bytes) -> Future[None]:
    """Append ``value`` on the loop, as a produce does, and its acks=all flush future."""
    result = loop.call(lambda: log.append(batch(value)))
    return loop.call(lambda: log.flush_future(result.last_offset))  # type: ignore[no-any-return]


class Spy:
    """Counts the fsyncs a ring is asked for."""

    def __init__(self, ring: FsyncRing) -> None:
        self.count = 0
        inner = ring.fdatasync

        def counted(fd: int, done: Callable[[int], None]) -> None:
            self.count += 1
            inner(fd, done)

        ring.fdatasync = counted  # type: ignore[method-assign]


def test_acks_all_appends_are_flushed_on_the_ring(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the zero window is process-wide: another test (or a log it left open) may have set
    # it to 0 or used up the budget; this one wants a window of its own
    monkeypatch.setattr(preallocate, "_window_bytes", preallocate.DEFAULT_WINDOW_BYTES)
    monkeypatch.setattr(preallocate, "_budget_bytes", preallocate.held_bytes() + (64 << 20))
    spy = Spy(ring)
    with _ring_log(tmp_path, ring) as (log, flusher):
        waits = [_acked(loop, log, b"v%d" % i) for i in range(50)]
        for fut in waits:
            assert fut.result(WAIT_S) is None
        assert log.flushed_offset == 50
        assert 1 <= flusher.fsync_rounds <= 50  # appends during an fsync share the next one
        # the zero window's extension (zeros written on the loop) is fsynced on the ring
        # too: one more ring fsync than flushes, and the file is longer than its records
        assert spy.count > flusher.fsync_rounds
        segment = log.segments()[-1]
        assert segment.log_path.stat().st_size > segment.size
        # the flushed mark (recovery's corruption boundary) follows each ring flush,
        # written just after its waiters are answered
        mark = loop.call(lambda: read_flush_mark(tmp_path / "t-0"))
        assert mark == FlushMark(0, 50, log.segments()[-1].size)


def test_a_flush_off_the_loop_thread_goes_to_a_helper(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    spy = Spy(ring)
    with _ring_log(tmp_path, ring) as (log, _flusher):
        result = log.append(batch(b"here"))  # this thread is not the ring's loop
        assert log.flush_future(result.last_offset).result(WAIT_S) is None
        assert spy.count == 0


class FakeRing:
    """Stands in for the real ring (its loop thread): each ``fdatasync`` raises
    ``refuse`` (as a kernel out of resources would), or else completes, on the loop,
    with ``res`` (minus an errno: a failed fsync)."""

    def __init__(
        self,
        real: FsyncRing,
        loop: asyncio.AbstractEventLoop,
        *,
        refuse: OSError | None = None,
        res: int = 0,
    ) -> None:
        self._real, self._loop, self._refuse, self._res = real, loop, refuse, res

    def on_loop_thread(self) -> bool:
        return self._real.on_loop_thread()

    def fdatasync(self, fd: int, done: Callable[[int], None]) -> None:
        if self._refuse is not None:
            raise self._refuse
        self._loop.call_soon(done, self._res)

    def call_soon(self, fn: Callable[..., None], *args: object) -> bool:
        return self._real.call_soon(fn, *args)

    def close(self) -> None:
        pass


def test_a_refused_submission_fails_the_waiters_then_the_log_goes_on(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    with _ring_log(tmp_path, ring) as (log, flusher):
        refusing = FakeRing(ring, loop.loop, refuse=OSError(errno.EAGAIN, "refused"))
        flusher.attach_ring(refusing)  # type: ignore[arg-type]
        fut = _acked(loop, log, b"lost?")
        with pytest.raises(StorageError, match=r"fsync of .*\.log failed"):
            fut.result(WAIT_S)
        assert log.flushed_offset == 0
        flusher.attach_ring(ring)
        assert _acked(loop, log, b"again").result(WAIT_S) is None
        assert log.flushed_offset == 2


def test_an_armed_fsync_failure_point_sends_the_flush_to_a_helper(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    """A fault that blocks must block the fsync's thread, never the event loop."""
    spy = Spy(ring)
    with _ring_log(tmp_path, ring) as (log, _flusher):
        with faults.inject("segment.fsync", error=errno.EIO):
            fut = _acked(loop, log, b"v")
            with pytest.raises(StorageError, match=r"fsync of .*\.log failed"):
                fut.result(WAIT_S)
        assert spy.count == 0


def test_an_error_completion_fails_the_waiters_with_the_errno(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    with _ring_log(tmp_path, ring) as (log, flusher):
        flusher.attach_ring(FakeRing(ring, loop.loop, res=-errno.EIO))  # type: ignore[arg-type]
        fut = _acked(loop, log, b"v")
        with pytest.raises(StorageError, match=r"Input/output error|EIO"):
            fut.result(WAIT_S)
        assert log.flushed_offset == 0


def test_a_log_whose_flush_lock_is_busy_is_flushed_by_a_helper(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    spy = Spy(ring)
    with _ring_log(tmp_path, ring) as (log, _flusher):
        with log._flush_lock:  # a checkpoint, say, holds it: the loop must not wait
            fut = _acked(loop, log, b"v")
            assert not fut.done()
        assert fut.result(WAIT_S) is None
        assert spy.count == 0


class Threads:
    """A FlushObserver recording, per log flush, whether its fsync ran on the ring."""

    def __init__(self) -> None:
        self.on_ring: list[bool] = []

    def fsync_done(self, seconds: float, *, on_ring: bool = False) -> None:
        self.on_ring.append(on_ring)

    def round_done(self, logs: int, requests: int) -> None:
        pass


def _idle(flusher: GroupCommitFlusher) -> None:
    """Wait until no log is in flight in ``flusher`` (its follow-ups included)."""
    deadline = time.monotonic() + WAIT_S
    while flusher._in_flight:
        assert time.monotonic() < deadline, "the flusher never went idle"
        time.sleep(0.005)


def test_a_log_flushed_by_a_helper_goes_back_to_the_ring(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    """Once a flush fell back to a helper, the next one requested during it runs on the
    ring again: without the hand-back a busy log would stay on the helpers."""
    with _ring_log(tmp_path, ring) as (log, flusher):
        threads = Threads()
        flusher.observer = threads
        with log._flush_lock:  # a checkpoint holds it: the first flush goes to a helper
            first = _acked(loop, log, b"a")
            second = _acked(loop, log, b"b")  # requested while the first is in flight
        assert first.result(WAIT_S) is None
        assert second.result(WAIT_S) is None
        _idle(flusher)
        assert threads.on_ring[0] is False
        assert threads.on_ring[1:] and all(threads.on_ring[1:]), threads.on_ring
        # and the log stays there
        for i in range(5):
            assert _acked(loop, log, b"c%d" % i).result(WAIT_S) is None
        _idle(flusher)
        assert threads.on_ring.count(False) == 1, threads.on_ring


def test_a_due_producer_snapshot_keeps_the_flush_on_the_ring(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    """The snapshot is written by a helper after the ring's fsync answered the waiters,
    at the flushed offset, replacing the previous periodic one."""
    with _ring_log(tmp_path, ring) as (log, flusher):
        threads = Threads()
        flusher.observer = threads
        log.snapshot_interval_bytes = 1  # every flush is due one
        for i in range(3):
            assert _acked(loop, log, b"v%d" % i).result(WAIT_S) is None
            _idle(flusher)
            assert log.producers.snapshot_path(i + 1).exists()
            assert not log.producers.snapshot_path(i).exists()  # the previous periodic one
        assert threads.on_ring == [True, True, True]


def test_a_snapshot_taken_before_a_truncation_is_not_written(
    tmp_path: Path, loop: LoopThread, ring: FsyncRing
) -> None:
    with _ring_log(tmp_path, ring) as (log, flusher):
        for i in range(3):
            assert _acked(loop, log, b"v%d" % i).result(WAIT_S) is None
        _idle(flusher)
        data, truncations = log.producers.snapshot_data(), log._truncations
        log.truncate_to(1)
        log._write_snapshot_tail(3, data, truncations)  # the follow-up, running late
        assert not log.producers.snapshot_path(3).exists()
        log._write_snapshot_tail(1, log.producers.snapshot_data(), log._truncations)
        assert log.producers.snapshot_path(1).exists()


def test_open_answers_none_off_x86_64(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    loop = asyncio.new_event_loop()
    try:
        assert FsyncRing.open(loop) is None
    finally:
        loop.close()


def test_open_answers_none_when_the_kernel_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A system call the kernel does not know (as where io_uring is compiled out) fails
    with ENOSYS: no ring, the helpers fsync."""
    why = io_uring_abi.supported()
    if why is not None:
        pytest.skip(why)
    monkeypatch.setattr(io_uring_abi, "_SYS_IO_URING_SETUP", 100_000)
    with pytest.raises(OSError) as refused:
        io_uring_abi.KernelRing(8)
    assert refused.value.errno == errno.ENOSYS
    loop = asyncio.new_event_loop()
    try:
        assert FsyncRing.open(loop) is None
    finally:
        loop.close()


def _kernel_ring() -> io_uring_abi.KernelRing:
    try:
        return io_uring_abi.KernelRing(4)
    except OSError as exc:
        pytest.skip(f"io_uring is not available here: {exc}")


def test_kernel_ring_completes_more_fsyncs_than_it_has_entries(tmp_path: Path) -> None:
    """Past the ring's 4 slots the indexes wrap: every completion comes back once, with
    its own user_data, and a descriptor the kernel refuses answers minus its errno."""
    ring = _kernel_ring()
    efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    fd = os.open(tmp_path / "f", os.O_CREAT | os.O_WRONLY)
    try:
        ring.register_eventfd(efd)
        got: list[tuple[int, int]] = []
        for i in range(11):
            os.write(fd, b"x" * 512)
            ring.submit_fsync(fd, 1_000 + i)
            if i % 3 == 2:  # let a few pile up before reading them
                got += _wait_completions(ring, efd, i + 1 - len(got))
        got += _wait_completions(ring, efd, 11 - len(got))
        assert sorted(got) == [(1_000 + i, 0) for i in range(11)]
        ring.submit_fsync(fd + 1_000, 7)  # never opened
        assert _wait_completions(ring, efd, 1) == [(7, -errno.EBADF)]
    finally:
        ring.close()
        ring.close()  # idempotent
        os.close(fd)
        os.close(efd)


def _wait_completions(ring: io_uring_abi.KernelRing, efd: int, n: int) -> list[tuple[int, int]]:
    """The next ``n`` completions, waiting on the eventfd the ring signals."""
    out: list[tuple[int, int]] = []
    deadline = time.monotonic() + WAIT_S
    while len(out) < n:
        assert time.monotonic() < deadline, f"only {out} completed"
        select.select([efd], [], [], 1)
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(efd)
        out += ring.completions()
    return out


def test_the_broker_setting() -> None:
    assert BrokerConfig.from_props({}).flush_io_uring is True
    assert BrokerConfig.from_props({"riverbed.log.flush.io.uring": "false"}).flush_io_uring is False
    with pytest.raises(ConfigError, match=r"riverbed\.log\.flush\.io\.uring"):
        BrokerConfig.from_props({"riverbed.log.flush.io.uring": "maybe"})
