"""Sparse segment indexes: the offset index (``.index``) and the time index (``.timeindex``).

On-disk formats (big-endian, fixed-size entries, Kafka's layout, no header)::

    .index      relativeOffset int32 | position int32          8 bytes per entry
    .timeindex  timestamp      int64 | relativeOffset int32    12 bytes per entry

``relativeOffset`` is ``offset - segment base offset``.  An offset-index entry says "the
batch containing ``offset`` starts at byte ``position`` of the .log file"; a time-index
entry ``(T, O)`` says "every record at an offset <= O has a timestamp <= T" (T is the
running maximum, O the last offset of the batch that raised it).  Keys are strictly
increasing in both files.  An entry is added at most once every ``index.interval.bytes``
of log, so lookups land near the target and the caller scans forward.

Entries live in memory (two ``array('q')``); :meth:`flush` appends the not-yet-written
ones to the file without fsync.  A segment loads its index files lazily, on first use
(see :class:`~riverbed.storage.segment.LogSegment`); each whole-file read passes the
failure point ``index.read`` (:mod:`riverbed.storage.faults`), which tests count.
Indexes are never trusted blindly: :meth:`load` returns
``None`` for a missing or inconsistent file and the segment rebuilds it from the log.  A
crash can leave an index short or stale, never make a read wrong.

Not thread-safe: the owning :class:`~riverbed.storage.segment.LogSegment` is guarded by
its log's lock.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import os
import struct
import sys
from array import array
from pathlib import Path

from riverbed.storage import faults

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class _SparseIndex:
    """Two parallel arrays, ``keys`` strictly increasing; subclasses fix the file format."""

    entry_size = 0

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.keys: array[int] = array("q")
        self.values: array[int] = array("q")
        self._written = 0  # entries already in the file
        # The file is known to hold exactly ``_written`` entries (loaded, cut or written
        # by this object since): flush then need not look for stale bytes past them.
        self._exact = False

    def __len__(self) -> int:
        return len(self.keys)

    def _encode(self, key: int, value: int) -> bytes:
        raise NotImplementedError

    def _decode(self, buf: bytes, pos: int) -> tuple[int, int]:
        raise NotImplementedError

    def _append(self, key: int, value: int) -> None:
        self.keys.append(key)
        self.values.append(value)

    def floor(self, key: int) -> tuple[int, int] | None:
        """The entry with the largest key <= ``key``, or None."""
        i = bisect.bisect_right(self.keys, key)
        if i == 0:
            return None
        return self.keys[i - 1], self.values[i - 1]

    def _truncate_entries(self, keep: int) -> None:
        del self.keys[keep:]
        del self.values[keep:]
        if self._written > keep:
            self._written = keep
            if self.path.exists():
                os.truncate(self.path, keep * self.entry_size)
            else:
                self._exact = False

    def flush(self) -> None:
        """Append the entries not yet in the file (no fsync: indexes are rebuildable)."""
        if self._written == len(self.keys):
            return
        data = b"".join(
            self._encode(self.keys[i], self.values[i]) for i in range(self._written, len(self.keys))
        )
        # Plain descriptor calls, not a Python file object: this runs on every fsync of
        # the log (the flusher's threads), and each call releases the GIL.
        start = self._written * self.entry_size
        end = start + len(data)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            written = 0
            while written < len(data):
                written += os.pwrite(fd, data[written:], start + written)
            # Stale entries past ours (a crash, a cut): looked for once per object.
            if not self._exact and os.fstat(fd).st_size > end:
                os.ftruncate(fd, end)
        finally:
            os.close(fd)
        self._written = len(self.keys)
        self._exact = True

    def rewrite(self) -> None:
        """Write the whole index afresh (after a rebuild)."""
        self._written = 0
        self.path.write_bytes(b"")
        self.flush()

    def clear(self) -> None:
        """Forget every entry in memory; the file is left alone until :meth:`rewrite`."""
        del self.keys[:]
        del self.values[:]
        self._written = 0
        self._exact = False

    def reset(self) -> None:
        self._truncate_entries(0)
        self.path.write_bytes(b"")

    def _load_entries(self) -> bool:
        """Read the whole file (one ``read``, decoded by ``array`` rather than one
        ``struct`` call per entry); False when it is missing, of a size that is not a
        whole number of entries, or its keys are not strictly increasing."""
        faults.point("index.read", self.path)
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if len(data) % self.entry_size:
            return False
        keys, values = self._decode_all(data)
        if not _strictly_increasing(keys):
            return False
        self.keys, self.values = keys, values
        self._written = len(keys)
        self._exact = True
        return True

    def _decode_all(self, data: bytes) -> tuple[array[int], array[int]]:
        raise NotImplementedError

    @classmethod
    def read_edges(cls, path: Path, base_offset: int) -> list[tuple[int, int]] | None:
        """The first and last entries of the file, decoded (two ``pread`` calls: the rest
        of the file is not read; ``[]`` for an empty file), or None when it is missing
        or not a whole number of entries.  What a lazy open checks (see
        :meth:`LogSegment.open_lazily <riverbed.storage.segment.LogSegment.open_lazily>`)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            size = os.fstat(fd).st_size
            if size % cls.entry_size:
                return None
            if size == 0:
                return []
            first = os.pread(fd, cls.entry_size, 0)
            last = os.pread(fd, cls.entry_size, size - cls.entry_size)
        finally:
            os.close(fd)
        if len(first) != cls.entry_size or len(last) != cls.entry_size:
            return None
        index = cls(path, base_offset)
        return [index._decode(first, 0), index._decode(last, 0)]


def _strictly_increasing(items: array[int]) -> bool:
    return all(map(operator.lt, items, itertools.islice(items, 1, None)))


def _big_endian(typecode: str, data: bytes) -> array[int]:
    out = array(typecode)
    out.frombytes(data)
    if sys.byteorder == "little":
        out.byteswap()
    return out


class OffsetIndex(_SparseIndex):
    """Offset -> file position (see module docstring)."""

    entry_size = _OFFSET_ENTRY.size

    def _encode(self, key: int, value: int) -> bytes:
        return _OFFSET_ENTRY.pack(key - self.base_offset, value)

    def _decode(self, buf: bytes, pos: int) -> tuple[int, int]:
        rel, position = _OFFSET_ENTRY.unpack_from(buf, pos)
        return self.base_offset + rel, position

    def _decode_all(self, data: bytes) -> tuple[array[int], array[int]]:
        pairs = _big_endian("i", data)  # rel0, pos0, rel1, pos1, ...
        base = self.base_offset
        keys = array("q", pairs[0::2]) if base == 0 else array("q", [base + r for r in pairs[0::2]])
        return keys, array("q", pairs[1::2])

    def append(self, offset: int, position: int) -> None:
        if self.keys and offset <= self.keys[-1]:
            return
        self._append(offset, position)

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch starting at or below ``offset`` (0 if none)."""
        entry = self.floor(offset)
        return 0 if entry is None else entry[1]

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self.keys, offset))

    @classmethod
    def load(cls, path: Path, base_offset: int, log_size: int) -> OffsetIndex | None:
        index = cls(path, base_offset)
        if not index._load_entries():
            return None
        if any(k < base_offset for k in index.keys[:1]) or any(
            p < 0 or p >= max(log_size, 1) for p in index.values[-1:]
        ):
            return None
        if not _strictly_increasing(index.values):
            return None
        return index


class TimeIndex(_SparseIndex):
    """Max timestamp so far -> last offset of the batch that set it."""

    entry_size = _TIME_ENTRY.size

    def _encode(self, key: int, value: int) -> bytes:
        return _TIME_ENTRY.pack(key, value - self.base_offset)

    def _decode(self, buf: bytes, pos: int) -> tuple[int, int]:
        ts, rel = _TIME_ENTRY.unpack_from(buf, pos)
        return ts, self.base_offset + rel

    def _decode_all(self, data: bytes) -> tuple[array[int], array[int]]:
        # 12-byte entries: view them as three int32 words (ts high, ts low, rel)
        words = _big_endian("i", data)
        high, low = words[0::3], array("I", words[1::3].tobytes())
        base = self.base_offset
        keys = array("q", [(h << 32) | lo for h, lo in zip(high, low, strict=True)])
        values = array("q", [base + r for r in words[2::3]])
        return keys, values

    def append(self, timestamp: int, offset: int) -> None:
        if self.keys and timestamp <= self.keys[-1]:
            return
        self._append(timestamp, offset)

    def last_offset_below(self, timestamp: int) -> int | None:
        """Largest indexed offset whose running max timestamp is < ``timestamp``."""
        i = bisect.bisect_left(self.keys, timestamp)
        return None if i == 0 else self.values[i - 1]

    def truncate_to(self, offset: int) -> None:
        keep = len(self.values)
        while keep and self.values[keep - 1] >= offset:
            keep -= 1
        self._truncate_entries(keep)

    @classmethod
    def load(cls, path: Path, base_offset: int, next_offset: int) -> TimeIndex | None:
        index = cls(path, base_offset)
        if not index._load_entries():
            return None
        if any(o < base_offset or o >= next_offset for o in (index.values[:1] + index.values[-1:])):
            return None
        return index
