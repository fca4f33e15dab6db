"""fdatasync through io_uring, submitted and completed on the broker's event loop.

Why: an fsync run by a helper thread needs the GIL twice (to start, and to answer its
waiters once the disk is done), and a loop that releases the GIL around each of its own
system calls (every socket read and write) keeps waking the waiting helper before its
timed wait runs out, so the interpreter never forces a switch: the helper starves.  With
the loop busy with I/O, one fsync's wait took p50 12.2 ms, p99 811 ms through a helper
thread and 0.65 / 1.0 ms through io_uring (``bench/bench_fsync_handoff.py``;
docs/benchmarks.md "The fsync hand-off starves on the GIL").  Here the kernel runs the
fsync (io_uring's own worker), and its completion is read by the loop through an
eventfd: no Python thread waits for the GIL on the way.

:class:`FsyncRing` is one ring per event loop.  :meth:`FsyncRing.fdatasync` submits an
``IORING_OP_FSYNC`` with ``IORING_FSYNC_DATASYNC`` for a descriptor and calls ``done(res)``
when it completes (``res`` 0, or minus an errno).  The kernel takes its own reference to
the file when the request is submitted, so the caller may close its descriptor at once.

The ring itself is :class:`riverbed.storage.io_uring_abi.KernelRing` (the kernel's
interface, spoken directly: the one binding with wheels on PyPI dies with SIGILL on CPUs
without AVX-512).

Availability: :meth:`FsyncRing.open` answers None, and says why once at INFO, off Linux
x86_64 or where the kernel refuses a ring (``/proc/sys/kernel/io_uring_disabled``, a
seccomp filter, a kernel before 5.1); the flusher's helper threads then fsync as
before.

Thread-safety: :meth:`fdatasync` only on the loop's thread (the submission queue has no
lock); completions are reaped under a lock, on the loop, or by :meth:`drain` on any
thread (the flusher's ``stop``, which may run after the loop has stopped), so every
submitted request's ``done`` runs exactly once.  Crash behaviour: nothing on disk; a
request whose completion was never reaped promised nothing to anyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

from riverbed.storage.io_uring_abi import KernelRing, supported

log = logging.getLogger(__name__)

RING_ENTRIES = 256
"""Submission queue size; each request is submitted at once, so this bounds nothing but
the completions the kernel can hold before it buffers them itself (IORING_FEAT_NODROP)."""

_told = False


class RingClosedError(OSError):
    """The ring is closing: the caller fsyncs another way (nothing was submitted)."""


class FsyncRing:
    """One io_uring whose fsync completions are read on ``loop`` (see module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._ring = KernelRing(RING_ENTRIES)
        try:
            self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            try:
                self._ring.register_eventfd(self._efd)
            except BaseException:
                os.close(self._efd)
                raise
        except BaseException:
            self._ring.close()
            raise
        self._reap_lock = threading.Lock()
        self._done: dict[int, Callable[[int], None]] = {}  # under _reap_lock
        self._seq = 0
        self._closing = False  # under _reap_lock: no new submission (close() drains)
        self._closed = False
        self.thread_id = threading.get_ident()
        loop.add_reader(self._efd, self._ready)

    @classmethod
    def open(cls, loop: asyncio.AbstractEventLoop) -> FsyncRing | None:
        """A ring on ``loop`` (call on its thread), or None where io_uring is unavailable."""
        global _told
        reason = supported()
        if reason is None:
            try:
                return cls(loop)
            except OSError as exc:
                reason = f"the kernel refused a ring: {exc}"
        if not _told:
            _told = True
            log.info("fsyncs run on helper threads: %s", reason)
        return None

    def on_loop_thread(self) -> bool:
        """Called on the loop's thread, and the ring still takes requests."""
        return threading.get_ident() == self.thread_id and not self._closing

    def call_soon(self, fn: Callable[..., None], *args: object) -> bool:
        """Run ``fn(*args)`` on the ring's loop thread soon (from any thread): False,
        with nothing scheduled, once the ring is closing or the loop no longer runs.  A
        loop stopped after this returned True drops the call (the broker stops its
        flusher, which closes the ring, before its loop)."""
        if self._closing or not self._loop.is_running():
            return False
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop closed meanwhile
            return False
        return True

    @property
    def in_flight(self) -> int:
        with self._reap_lock:
            return len(self._done)

    def fdatasync(self, fd: int, done: Callable[[int], None]) -> None:
        """Submit an fdatasync of ``fd``; ``done(res)`` runs once it completes.  On the
        loop's thread only.  Raises :class:`RingClosedError` once :meth:`close` began,
        OSError if the kernel refused the submission (``done`` is then never called).
        Submitting holds the reap lock, so :meth:`close` never releases the ring under
        a submission, and drains every request submitted before it."""
        with self._reap_lock:
            if self._closing:
                raise RingClosedError("the fsync ring is closing")
            self._seq += 1
            key = self._seq
            # Every entry is submitted at once, so the queue is never full for long.
            self._ring.submit_fsync(fd, key)
            self._done[key] = done

    def _ready(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self._efd)
        self._reap()

    def _reap(self) -> int:
        """Run ``done`` for every completion posted so far; returns how many."""
        finished: list[tuple[Callable[[int], None], int]] = []
        with self._reap_lock:
            if self._closed:
                return 0
            for key, res in self._ring.completions():
                done = self._done.pop(key, None)
                if done is not None:
                    finished.append((done, res))
        for done, res in finished:  # outside the lock: a callback may submit again
            try:
                done(res)
            except Exception:
                log.exception("an fsync completion failed")
        return len(finished)

    def drain(self, timeout_s: float = 60.0) -> bool:
        """Reap until nothing is in flight (from any thread: the loop may have stopped);
        False if requests were still in flight after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight:
            if not self._reap():
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.0005)
        return True

    def close(self) -> None:
        """Drain, then release the ring (its reader is removed if the loop still runs)."""
        with self._reap_lock:
            if self._closing:
                return
            self._closing = True
        if not self.drain():
            log.warning("closing the fsync ring with %d fsyncs still in flight", self.in_flight)
        with self._reap_lock:
            self._closed = True
        self._ring.close()
        if self._loop.is_running() and threading.get_ident() != self.thread_id:
            try:
                self._loop.call_soon_threadsafe(self._release_eventfd)
                return
            except RuntimeError:  # the loop closed meanwhile
                pass
        self._release_eventfd()

    def _release_eventfd(self) -> None:
        if not self._loop.is_closed():
            self._loop.remove_reader(self._efd)
        os.close(self._efd)
