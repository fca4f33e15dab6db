"""Pre-zeroed space ahead of the active segment's logical end (issue 9 / 18.2).

Why: an append that grows a file makes its ``fdatasync`` commit the file system's
journal (new blocks, new size); overwriting blocks that are already allocated, already
written and already durable, with the size unchanged, flushes only the data.  On ext4
here a 2.6 KiB write + fdatasync took p50 0.16 ms as an append and 0.076 ms as an
overwrite inside a pre-zeroed region (docs/benchmarks.md "Pre-zeroed segment space").
``fallocate`` does not help: its unwritten extents are converted on first write, which
needs the journal again.  So the zeros are really written (and fsynced).

What: a log whose fsyncs are small keeps a *zero window* after its active segment's
logical end (:attr:`LogSegment.size`): bytes ``[size, allocated)`` of the ``.log`` file
are zeros (:attr:`LogSegment.allocated`).  After each flush of the active segment,
:meth:`ZeroWindow.plan` decides whether to extend it (to ``size +`` :data:`window`
bytes, never past ``segment.bytes``) once less than half of it is left; the owner
writes the zeros (:meth:`LogSegment.zero_fill`) and fsyncs them, on the flushing thread,
after the flush's waiters were answered, so the metadata commit is paid once per
window and not by an acknowledgement.

Adaptive: a log whose fsyncs cover many bytes each (a throughput stream: large group
commits) gains nothing from it and would write everything twice, so the window is kept
only while the running average of bytes appended per fsync (an exponential average,
weight 1/8) is at most :data:`SMALL_FSYNC_BYTES`.  Only logs under the per-append flush
policy (Riverbed's default) get one: under the interval and OS policies (Kafka's) no
acknowledgement waits for an fsync, so there is nothing to gain.

Invariants (relied on by reads, recovery and seal):

* every byte in ``[size, allocated)`` of the active segment's file is zero, and nothing
  but zeros ever lies after a segment's logical end (appends are contiguous from
  ``size``);
* a sealed segment's file is cut to its logical end (:meth:`LogSegment.trim_zeros`)
  before its roll fsync, which comes before the recovery point passes it; a clean close
  cuts the active segment before the clean-shutdown marker.  So a trusted segment's file
  size is its logical end, as before;
* after a crash only the segments above the recovery point may keep a zero tail;
  recovery (:mod:`riverbed.storage.recovery`) cuts it as preallocated space, never as
  corruption and never by deleting later segments when the offsets are contiguous.

Budget: the zeros every log of the process holds ahead of its end are bounded by
:data:`DEFAULT_BUDGET_BYTES` (64 MiB: 64 full windows), so many small-fsync partitions
do not each keep a window on disk (1,000 of them would otherwise hold ~1 GiB of zeros
until their segments roll or close).  Each :class:`ZeroWindow` registers what its log
holds (``allocated - size`` of the active segment, as of its last flush: an idle log's
figure does not change, a busy one's is refreshed by every flush) and an extension
that would take the total past the budget is not made: that log's fsyncs are appends
again, correct and slower.  A window's share is released when its segment is cut (roll,
clean close) and when the object is collected.

Settings: the broker settings ``riverbed.log.zero.window.bytes`` (default
:data:`DEFAULT_WINDOW_BYTES`, at most :data:`MAX_WINDOW_BYTES`; 0 turns it off) and
``riverbed.log.zero.window.total.bytes`` (default :data:`DEFAULT_BUDGET_BYTES`), applied
process-wide by :func:`configure` at broker start; read when a plan is made, so they
apply at once.
"""

from __future__ import annotations

import threading
import weakref

DEFAULT_WINDOW_BYTES = 1 << 20
"""Zeros kept ahead of the logical end (1 MiB: one metadata commit per ~400 fsyncs of
2.6 KiB; see docs/benchmarks.md for the sizes measured)."""

MAX_WINDOW_BYTES = 64 << 20
"""The largest window the setting accepts (its zeros are written under the log's lock)."""

DEFAULT_BUDGET_BYTES = 64 << 20
"""The zeros all logs of the process may hold ahead of their ends together."""

SMALL_FSYNC_BYTES = 64 << 10
"""The window is kept while a log's average bytes per fsync is at most this."""

PAGE = 4096

_lock = threading.Lock()
_window_bytes = DEFAULT_WINDOW_BYTES
_budget_bytes = DEFAULT_BUDGET_BYTES
_held: dict[int, int] = {}  # id(ZeroWindow) -> zeros its log holds; under _lock
_held_total = 0


def configure(window_bytes: int, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
    """Set the window of every log in this process (0: off; rounded up to pages) and
    the budget of zeros all logs hold together."""
    global _window_bytes, _budget_bytes
    if not 0 <= window_bytes <= MAX_WINDOW_BYTES:
        raise ValueError(f"window_bytes must be between 0 and {MAX_WINDOW_BYTES}")
    if budget_bytes < 0:
        raise ValueError("budget_bytes must be >= 0")
    with _lock:
        _window_bytes = -(-window_bytes // PAGE) * PAGE
        _budget_bytes = budget_bytes


def window_bytes() -> int:
    """The process-wide window size now (0: off)."""
    return _window_bytes


def held_bytes() -> int:
    """The zeros all logs of this process hold ahead of their ends, as last registered."""
    return _held_total


def _hold(key: int, amount: int, limit: int | None) -> bool:
    """Register ``amount`` held by window ``key``; with ``limit``, only if the new total
    stays within it (False: nothing changed)."""
    global _held_total
    with _lock:
        total = _held_total - _held.get(key, 0) + amount
        if limit is not None and total > limit:
            return False
        _held_total = total
        if amount:
            _held[key] = amount
        else:
            _held.pop(key, None)
        return True


def _release(key: int) -> None:
    _hold(key, 0, None)


class ZeroWindow:
    """The per-log policy: observes each flush of the active segment, plans extensions.

    Not thread-safe: called by the log's flush, under its ``_flush_lock``."""

    __slots__ = ("__weakref__", "_avg", "_base", "_position")

    def __init__(self) -> None:
        self._avg = -1.0  # average bytes per fsync; -1: no flush seen yet
        self._base = -1  # segment and byte position the previous flush reached
        self._position = 0
        weakref.finalize(self, _release, id(self))

    def release(self) -> None:
        """The active segment holds no zeros any more (cut at roll or clean close)."""
        _release(id(self))

    @property
    def average_bytes_per_fsync(self) -> float:
        return self._avg

    def flushed(self, segment_base: int, position: int) -> None:
        """A flush made the active segment at ``segment_base`` durable up to byte
        ``position``; the bytes since the previous flush count towards the average."""
        # a new segment: its bytes so far count
        covered = position - (self._position if segment_base == self._base else 0)
        self._base, self._position = segment_base, position
        if covered <= 0:
            return
        self._avg = covered if self._avg < 0 else self._avg + (covered - self._avg) / 8

    @property
    def wanted(self) -> bool:
        """True while the log's fsyncs are small enough for a window to pay."""
        return 0 <= self._avg <= SMALL_FSYNC_BYTES and _window_bytes > 0

    def plan(self, size: int, allocated: int, segment_bytes: int) -> int:
        """The file length to zero-fill the active segment to, or 0 for nothing:
        ``size + window`` (page-aligned, at most ``segment_bytes``: the segment rolls
        before its logical end passes it) once less than half the window is left, and
        only within the process's budget.  Registers what the log holds now."""
        key = id(self)
        held = max(allocated - size, 0)
        _hold(key, held, None)
        window = _window_bytes
        if not self.wanted or window <= 0:
            return 0
        if held >= window // 2:
            return 0
        end = min(-(-(size + window) // PAGE) * PAGE, segment_bytes)
        if end <= allocated:
            return 0
        return end if _hold(key, end - size, _budget_bytes) else 0
