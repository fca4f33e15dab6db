"""A bounded LRU of open file descriptors, so a data dir's size never decides its fd count.

Every segment ``.log`` file (sealed *and* active) is a :class:`CachedFile`: a path plus,
while it is in the cache, an open descriptor.  Using the file (:meth:`CachedFile.pread`,
``pwrite``, ``fsync``, ...) opens it on demand and marks it most recently used; opening
past ``capacity`` closes the least recently used descriptors first.  So opening a data
dir of 20,000 partitions needs at most ``capacity`` segment descriptors, and a restart
never fails with EMFILE however many partitions exist.  (Index files are read whole at
load and appended with a short-lived ``open``: they hold no descriptor; nothing is
mmap'd.)

One cache per process (:func:`shared`), because ``RLIMIT_NOFILE`` is per process: every
:class:`~riverbed.storage.manager.LogManager` of the process shares it.  Its capacity is a
quarter of the soft ``RLIMIT_NOFILE`` at first use, clamped to [16, 4096] (sockets,
checkpoint writes and the rest keep the other three quarters); :func:`configure_shared`
changes it.

Invariants:

* a descriptor in use (between :meth:`FdCache.acquire` and :meth:`FdCache.release`, which
  the ``CachedFile`` methods pair) is *pinned*: eviction skips it, so no thread ever
  reads a descriptor that was closed or reused by the kernel for another file;
* when every open descriptor is pinned the cache opens one more anyway (a soft bound:
  at most ``capacity`` plus the number of threads using files at that moment);
* a reopened file is opened ``O_RDWR`` without ``O_CREAT``: a file that vanished raises
  FileNotFoundError rather than being recreated empty.

Crash behaviour: closing a descriptor loses nothing: written data lives in the page
cache, and ``fsync`` through a later descriptor of the same file flushes it (Linux
fsync writes back the inode's dirty pages whichever descriptor wrote them, and reports
a write-back error not yet seen by anyone to the next fsync).

Thread-safe: one lock guards the LRU; file system calls other than ``open``/``close``
run outside it.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_MIN_CAPACITY = 16
_MAX_CAPACITY = 4096


def default_capacity() -> int:
    """A quarter of the soft RLIMIT_NOFILE, clamped to [16, 4096]."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _MAX_CAPACITY
    return max(_MIN_CAPACITY, min(_MAX_CAPACITY, soft // 4))


class CachedFile:
    """A file whose descriptor the cache opens on demand.  Build with :meth:`FdCache.file`."""

    __slots__ = ("_cache", "_closed", "fd", "path", "pins")

    def __init__(self, cache: FdCache, path: Path) -> None:
        self._cache = cache
        self.path = path
        self.fd = -1  # open descriptor while in the cache, else -1 (guarded by the cache)
        self.pins = 0
        self._closed = False

    @contextmanager
    def use(self) -> Iterator[int]:
        """The open descriptor, pinned for the ``with`` block."""
        fd = self._cache.acquire(self)
        try:
            yield fd
        finally:
            self._cache.release(self)

    def pread(self, length: int, position: int) -> bytes:
        fd = self._cache.acquire(self)  # not via use(): this is the hot path
        try:
            return os.pread(fd, length, position)
        finally:
            self._cache.release(self)

    def pwrite(self, data: bytes | bytearray | memoryview, position: int) -> int:
        fd = self._cache.acquire(self)
        try:
            return os.pwrite(fd, data, position)
        finally:
            self._cache.release(self)

    def pwritev(self, parts: Sequence[bytes | bytearray | memoryview], position: int) -> int:
        """One ``pwritev``: ``parts`` written back to back from ``position`` (may be short)."""
        fd = self._cache.acquire(self)
        try:
            return os.pwritev(fd, parts, position)
        finally:
            self._cache.release(self)

    def ftruncate(self, size: int) -> None:
        with self.use() as fd:
            os.ftruncate(fd, size)

    def fsync(self) -> None:
        with self.use() as fd:
            os.fsync(fd)

    def size(self) -> int:
        with self.use() as fd:
            return os.fstat(fd).st_size

    def renamed(self, path: Path) -> None:
        """The caller renamed the file to ``path``; an open descriptor stays valid."""
        self.path = path

    @property
    def is_open(self) -> bool:
        return self.fd >= 0

    def close(self) -> None:
        """Close the descriptor (once no thread uses it) and forget the file."""
        self._cache.forget(self)


class FdCache:
    """Bounded LRU of open descriptors (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"fd cache capacity must be >= 1, not {capacity}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._open: OrderedDict[int, CachedFile] = OrderedDict()  # id -> file, LRU first
        self.opens = 0  # descriptors opened so far (tests, metrics)

    def file(self, path: Path, *, create: bool = False) -> CachedFile:
        """A cached file for ``path``; with ``create`` the file is created if missing
        (and opened now, so an error surfaces here)."""
        handle = CachedFile(self, path)
        if create:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            with self._lock:
                self._make_room()
                handle.fd = fd
                self.opens += 1
                self._open[id(handle)] = handle
        return handle

    @property
    def open_count(self) -> int:
        with self._lock:
            return len(self._open)

    def acquire(self, handle: CachedFile) -> int:
        with self._lock:
            if handle._closed:
                raise OSError(errno.EBADF, f"{handle.path} was closed")
            if handle.fd >= 0:
                self._open.move_to_end(id(handle))
            else:
                self._make_room()
                handle.fd = self._open_fd(handle.path)
                self.opens += 1
                self._open[id(handle)] = handle
            handle.pins += 1
            return handle.fd

    def release(self, handle: CachedFile) -> None:
        with self._lock:
            handle.pins -= 1
            if handle._closed and handle.pins == 0 and handle.fd >= 0:
                os.close(handle.fd)
                handle.fd = -1

    def forget(self, handle: CachedFile) -> None:
        with self._lock:
            handle._closed = True
            self._open.pop(id(handle), None)
            if handle.pins == 0 and handle.fd >= 0:
                os.close(handle.fd)
                handle.fd = -1

    def _make_room(self) -> None:
        """Close least recently used unpinned descriptors until one more fits."""
        if len(self._open) < self.capacity:
            return
        for key, victim in list(self._open.items()):
            if len(self._open) < self.capacity:
                return
            if victim.pins == 0:
                del self._open[key]
                os.close(victim.fd)
                victim.fd = -1

    def _open_fd(self, path: Path) -> int:
        try:
            return os.open(path, os.O_RDWR)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
        # the process is out of descriptors for other reasons: give back all we can
        for key, victim in list(self._open.items()):
            if victim.pins == 0:
                del self._open[key]
                os.close(victim.fd)
                victim.fd = -1
        return os.open(path, os.O_RDWR)

    def close_all(self) -> None:
        """Close every unpinned descriptor (they reopen on next use)."""
        with self._lock:
            for key, victim in list(self._open.items()):
                if victim.pins == 0:
                    del self._open[key]
                    os.close(victim.fd)
                    victim.fd = -1


_shared: FdCache | None = None
_shared_lock = threading.Lock()


def shared() -> FdCache:
    """The process-wide cache used by every segment (created at first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = FdCache(default_capacity())
        return _shared


def configure_shared(capacity: int) -> None:
    """Set the shared cache's capacity (it shrinks lazily, at the next opens)."""
    cache = shared()
    if capacity < 1:
        raise ValueError(f"fd cache capacity must be >= 1, not {capacity}")
    cache.capacity = capacity
