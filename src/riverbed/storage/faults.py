"""Named failure points in the storage layer, for fault tests (instead of patching ``os``).

Storage code marks each place where the disk can fail or stall with one call::

    faults.point("segment.fsync", self.log_path)

When nothing is armed that is a function call that tests one module-level dict and
returns: no lock, no allocation.  Tests arm a point with :func:`inject`, a context
manager that always disarms (and releases anything it blocked) on exit.

Points (the ``path`` each one passes, which ``match`` filters on):

=====================  ============================================================  ==========
name                   where (just before the system call)                            path
=====================  ============================================================  ==========
``segment.write``      :meth:`LogSegment.append`, the ``pwrite`` of a batch run       the .log
``segment.fsync``      :meth:`LogSegment.fsync`                                       the .log
``segment.truncate``   :meth:`LogSegment.truncate_bytes` (recovery, truncation),      the .log
                       :meth:`LogSegment.trim_zeros` (roll fsync, clean close)
``segment.zero_fill``  :meth:`LogSegment.zero_fill` (pre-zeroed window, see          the .log
                       :mod:`riverbed.storage.preallocate`)
``index.flush``        :meth:`LogSegment.flush_indexes` (appending index entries)     the .log
``index.read``         reading a whole ``.index`` / ``.timeindex`` file (a load; a        the index
                       lazy open reads only its first and last entries, no point)
``file.fsync``         :func:`atomic_file.write_atomically`, fsync of the ``.tmp``     the target
``file.rename``        ``write_atomically``'s rename over; retiring a segment         the source
                       (``.deleted``); the compaction swap renames
``dir.fsync``          :func:`atomic_file.fsync_dir`                                  the dir
``log.roll``           :meth:`PartitionLog._roll_locked`, before the new segment      the dir
=====================  ============================================================  ==========

What an armed point does, in this order: sleep ``delay_s``; block until
:meth:`Fault.release` (``block=True``, with a safety limit so a broken test cannot hang
the process forever); raise ``OSError(error, ...)`` (``error`` an errno such as
``errno.ENOSPC`` or ``errno.EIO``).  ``match`` (a substring of the path, or a predicate)
restricts it to some files; ``times`` to the first N matching calls.  The storage code
reacts as it would to the real failure: a failed ``segment.write`` is cut back and
raised as StorageError, a failed ``segment.fsync`` fails the flush waiters, and so on.

Simulated power loss (:func:`record_power_loss`): a recorder watches ``segment.write``,
``segment.fsync`` and ``segment.zero_fill`` and remembers, per ``.log`` file, how many
bytes its last fsync covered: the segment's logical end (``end``, which
``segment.fsync`` passes) when that fsync started (an append racing with it only makes
the recorder more pessimistic; an fsync failed by an injected fault does not count).
After the log is closed as by a crash (``close_unclean``), :meth:`PowerLoss.cut` does
to the files what losing the page cache would: every recorded ``.log`` goes back to its
last fsynced end, or with ``tear`` to some length between that and its current data end
(a torn write, or later writes reaching the disk before earlier ones of another file),
and the index files of those segments, never fsynced, are emptied.  A file that had
pre-zeroed space (:mod:`riverbed.storage.preallocate`) keeps its length: the bytes after
the kept part become zeros again (the zeros were fsynced before the overwrites that are
lost); its "current data end" is the end of its last non-zero byte.  Deliberately not
modelled: directory entries (a created, renamed or deleted file stays so), files written
outside these points (checkpoints and snapshots are fsynced before their rename;
``flushed.mark`` keeps its last write, a position that was fsynced when written),
compaction output, and reordered writes within one file.  So it checks the claim that
matters - every acknowledged (flushed) record survives and recovery serves nothing past
the torn point - not every possible disk behaviour.

Thread-safe: arming and disarming take a lock; :func:`point` reads an immutable tuple.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

POINTS = frozenset(
    {
        "segment.write",
        "segment.fsync",
        "segment.truncate",
        "segment.zero_fill",
        "index.flush",
        "index.read",
        "file.fsync",
        "file.rename",
        "dir.fsync",
        "log.roll",
    }
)

BLOCK_LIMIT_S = 120.0
"""A blocked point lets its caller go after this long even if never released."""

PathLike = Path | str | None
Matcher = str | Callable[[str], bool] | None

_armed: dict[str, tuple[_Armed, ...]] = {}
_registry_lock = threading.Lock()


def point(name: str, path: PathLike = None, end: int = -1) -> None:
    """A failure point: does nothing unless a test armed ``name``.  ``end``: for
    ``segment.fsync`` / ``segment.zero_fill``, the segment's logical end (its batches'
    bytes) at this call, for the power-loss recorder; -1 when not given."""
    if _armed:
        _fire(name, path, end)


def _fire(name: str, path: PathLike, end: int) -> None:
    for armed in _armed.get(name, ()):
        armed.hit(name, "" if path is None else os.fspath(path), end)


class _Armed:
    """Something that wants to hear about a point: a :class:`Fault` or a recorder.
    Observers (recorders) hear a call only after every fault armed there let it pass."""

    observer = False

    def hit(self, name: str, path: str, end: int = -1) -> None:
        raise NotImplementedError


@dataclass(eq=False)
class Fault(_Armed):
    """One armed failure point (see :func:`inject`)."""

    name: str
    error: int | None = None
    delay_s: float = 0.0
    block: bool = False
    match: Matcher = None
    times: int | None = None
    hits: int = field(init=False, default=0)
    """How many calls the fault acted on."""
    paths: list[str] = field(init=False, default_factory=list)
    """The path of each call it acted on."""
    reached: threading.Event = field(init=False, default_factory=threading.Event)
    """Set when the first matching call arrives (before any delay or block)."""
    _released: threading.Event = field(init=False, default_factory=threading.Event)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def hit(self, name: str, path: str, end: int = -1) -> None:
        if not self._matches(path):
            return
        with self._lock:
            if self.times is not None and self.hits >= self.times:
                return
            self.hits += 1
            self.paths.append(path)
        self.reached.set()
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        if self.block:
            self._released.wait(BLOCK_LIMIT_S)
        if self.error is not None:
            raise OSError(self.error, f"{os.strerror(self.error)} (injected at {name})", path)

    def _matches(self, path: str) -> bool:
        if self.match is None:
            return True
        if isinstance(self.match, str):
            return self.match in path
        return self.match(path)

    def wait_reached(self, timeout_s: float = 10.0) -> bool:
        return self.reached.wait(timeout_s)

    def release(self) -> None:
        """Let blocked callers (and every later one) through."""
        self._released.set()


def _arm(name: str, armed: _Armed) -> None:
    if name not in POINTS:
        raise ValueError(f"unknown failure point {name!r}; known: {sorted(POINTS)}")
    with _registry_lock:
        both = (*_armed.get(name, ()), armed)
        _armed[name] = tuple(sorted(both, key=lambda a: a.observer))  # stable: faults first


def _disarm(name: str, armed: _Armed) -> None:
    with _registry_lock:
        rest = tuple(a for a in _armed.get(name, ()) if a is not armed)
        if rest:
            _armed[name] = rest
        else:
            _armed.pop(name, None)


@contextmanager
def inject(
    name: str,
    *,
    error: int | None = None,
    delay_s: float = 0.0,
    block: bool = False,
    match: Matcher = None,
    times: int | None = None,
) -> Iterator[Fault]:
    """Arm failure point ``name`` for the ``with`` block; yields the :class:`Fault`.

    ``error``: raise ``OSError(error)`` there; ``delay_s``: sleep first; ``block``: wait
    for ``fault.release()``; ``match``: only paths containing this string (or for which
    this predicate is true); ``times``: only the first N matching calls.  On exit the
    point is disarmed and blocked callers are released, whatever happened.
    """
    fault = Fault(name, error=error, delay_s=delay_s, block=block, match=match, times=times)
    _arm(name, fault)
    try:
        yield fault
    finally:
        _disarm(name, fault)
        fault.release()


def is_armed(name: str) -> bool:
    """Whether a test armed ``name`` (a fault or a recorder): a code path that would call
    the point somewhere a fault could not act as on the real call (the event loop, for
    an fsync a ring runs) takes the path that calls it where the real call happens."""
    return name in _armed


def armed_points() -> list[str]:
    """The names armed now (tests assert it is empty after themselves)."""
    return sorted(_armed)


# -- simulated power loss ----------------------------------------------------------------

_INDEX_SUFFIXES = (".index", ".timeindex")


class PowerLoss(_Armed):
    """Records, per ``.log`` file, the size its last fsync covered (module docstring)."""

    observer = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._synced: dict[str, int] = {}
        self._zero_filled: set[str] = set()  # files that had pre-zeroed space

    def hit(self, name: str, path: str, end: int = -1) -> None:
        if not path.endswith(".log"):
            return
        size = _size(path)
        with self._lock:
            if name == "segment.fsync":
                self._synced[path] = size if end < 0 else min(end, size)
            elif name == "segment.zero_fill":
                self._zero_filled.add(path)
            else:
                # First sight of a file: what it held before this process wrote to it is
                # taken as durable (start recording before opening the log).
                self._synced.setdefault(path, size)

    def synced_size(self, path: PathLike) -> int | None:
        with self._lock:
            return self._synced.get(os.fspath(path or ""))

    def unsynced(self) -> dict[str, tuple[int, int]]:
        """``{path: (last fsynced size, current size)}`` of the files with unsynced bytes."""
        with self._lock:
            synced = dict(self._synced)
        out = {}
        for path, size in synced.items():
            current = self._data_end(path)
            if current > size:
                out[path] = (size, current)
        return out

    def cut(self, tear: Callable[[str, int, int], int] | None = None) -> dict[str, int]:
        """Lose what was never fsynced; call after the log's files are closed (a crash).

        Each recorded ``.log`` still present is truncated to its last fsynced size, or
        to ``tear(path, synced, current)`` bytes (clamped to that range); the ``.index``
        and ``.timeindex`` of the segment are emptied (never fsynced).  Returns
        ``{path: bytes dropped}``.
        """
        with self._lock:
            synced = dict(self._synced)
        dropped = {}
        for path, size in synced.items():
            if not os.path.exists(path):
                continue  # retired or compacted away meanwhile
            current = self._data_end(path)
            keep = min(size, current)
            if tear is not None and current > size:
                keep = min(max(tear(path, size, current), size), current)
            if path in self._zero_filled:
                length = _size(path)
                with open(path, "r+b") as f:
                    f.seek(keep)
                    f.write(bytes(max(length - keep, 0)))
            else:
                os.truncate(path, keep)
            dropped[path] = current - keep
            stem = path[: -len(".log")]
            for suffix in _INDEX_SUFFIXES:
                if os.path.exists(stem + suffix):
                    os.truncate(stem + suffix, 0)
        return dropped

    def _data_end(self, path: str) -> int:
        """The file's size, or for a file with pre-zeroed space the end of its last
        non-zero byte (a batch ending in zero bytes only looks shorter: pessimistic)."""
        if path not in self._zero_filled:
            return _size(path)
        try:
            with open(path, "rb") as f:
                return len(f.read().rstrip(b"\0"))
        except FileNotFoundError:
            return 0


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


@contextmanager
def record_power_loss() -> Iterator[PowerLoss]:
    """Record unsynced segment writes for the ``with`` block; call ``cut()`` inside it
    (after an unclean close) to simulate the power loss, then reopen the log."""
    recorder = PowerLoss()
    names = ("segment.write", "segment.fsync", "segment.zero_fill")
    for name in names:
        _arm(name, recorder)
    try:
        yield recorder
    finally:
        for name in names:
            _disarm(name, recorder)
