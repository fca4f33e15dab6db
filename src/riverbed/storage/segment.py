"""One log segment: a ``.log`` file of record batches plus its two sparse indexes.

Files, named by the segment's base offset as 20 zero-padded digits (Kafka's names)::

    00000000000000000000.log         record batches v2 exactly as received, base offsets
                                     assigned; nothing else (no header, no footer)
    00000000000000000000.index       see riverbed.storage.index.OffsetIndex
    00000000000000000000.timeindex   see riverbed.storage.index.TimeIndex
    00000000000000000000.txnindex    aborted transactions whose ABORT marker is in this
                                     segment (riverbed.storage.txn_index); only once
                                     there is one

Invariants: batches are contiguous from byte 0 to ``size``; base offsets strictly
increase; every batch's offsets are >= the segment's base offset and < the next
segment's base offset.  The segment's ``next_offset`` is one past the last batch's last
offset (the base offset when empty).

Logical end vs file size: ``size`` is the segment's logical end, and every read, scan,
index check and size report goes by it, never by the file's length.  The active segment
may keep zeros after it (``[size, allocated)``, written by :meth:`zero_fill`: see
:mod:`riverbed.storage.preallocate`), which appends then overwrite.  Nothing but zeros
ever lies after ``size`` in this process.  :meth:`trim_zeros` cuts the file back to
``size``; the log calls it before a sealed segment's roll fsync and before a clean
close, so a segment trusted at load (cleanly closed, or below the recovery point) has
file size == logical end, and :meth:`open` takes the file size as ``size``.

Reads use ``pread`` and never load the whole file.  Appends are one ``pwrite`` of the
already-encoded bytes at ``size``; a failed or short write is cut back so the file never
keeps a partial batch from this process.  The ``.log`` descriptor comes from the
process-wide :mod:`riverbed.storage.fd_cache` (opened on demand, closed when least
recently used), so a segment holds no descriptor while idle.

Serving: reads go through :meth:`locate_verified` / :meth:`read_verified`, which verify
every batch before it is first served (:mod:`riverbed.storage.verify`: a per-segment
watermark that :meth:`rebuild` and :meth:`append` advance), so a damaged batch raises
CorruptSegmentError and is never served, and a damaged header never ends a walk early.

Crash behaviour: a crash may leave a torn batch at the end of the active segment, and
(zero window) zeros after the last batch, in the active segment or in a segment sealed
by a roll whose fsync had not happened; the loader (:mod:`riverbed.storage.recovery`)
finds them with :meth:`scan` / :meth:`zeros_from` and cuts them off with
:meth:`truncate_bytes` — only above the flushed position; below it, it is corruption.

Not thread-safe: the owning :class:`~riverbed.storage.log.PartitionLog` serialises access.
"""

from __future__ import annotations

import bisect
import errno
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from riverbed.errors import CorruptRecordError, CorruptSegmentError, StorageError
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader, validate_batch
from riverbed.storage import faults
from riverbed.storage.fd_cache import CachedFile, FdCache
from riverbed.storage.fd_cache import shared as shared_fd_cache
from riverbed.storage.index import OffsetIndex, TimeIndex
from riverbed.storage.txn_index import TXN_INDEX_SUFFIX, TransactionIndex
from riverbed.storage.verify import SegmentVerifier

if TYPE_CHECKING:
    from riverbed.storage.uring import FsyncRing

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
_NO_LIMIT = (1 << 63) - 1
_IOV_MAX = 1024  # buffers per pwritev (Linux's UIO_MAXIOV)
_SCAN_CHUNK = 1 << 20


def _write_all(
    file: CachedFile, parts: Sequence[bytes | bytearray | memoryview], position: int
) -> int:
    """Write ``parts`` back to back from ``position``, resuming after short writes
    (at most :data:`_IOV_MAX` buffers per system call); returns the bytes written."""
    views = [v for v in (memoryview(p) for p in parts) if v.nbytes]
    total = sum(v.nbytes for v in views)
    written = i = 0
    while i < len(views):
        chunk = views[i : i + _IOV_MAX]
        if len(chunk) == 1:
            n = file.pwrite(chunk[0], position + written)
        else:
            n = file.pwritev(chunk, position + written)
        if n <= 0:
            raise OSError(errno.EIO, "write made no progress")
        written += n
        while n:
            if n >= views[i].nbytes:
                n -= views[i].nbytes
                i += 1
            else:
                views[i] = views[i][n:]
                n = 0
    return total


def _rename_deleted(path: Path) -> Path:
    target = path.with_name(path.name + DELETED_SUFFIX)
    if path.exists():
        faults.point("file.rename", path)
        os.replace(path, target)
    return target


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    """A ``.log`` file and its indexes.  Build with :meth:`open`."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        file: CachedFile | None,
        size: int,
        index_interval_bytes: int,
        created_ms: int,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.file = file  # None only for the placeholder of an offline partition
        self.size = size  # the logical end: batches are [0, size)
        # The file's length as this process made it (>= size; zeros in [size, allocated)).
        self.allocated = size
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        name = segment_name(base_offset)
        self.log_path = directory / (name + LOG_SUFFIX)
        self.offset_index_path = directory / (name + INDEX_SUFFIX)
        self.time_index_path = directory / (name + TIME_INDEX_SUFFIX)
        # Both None while the index files are not loaded (a lazy open): the properties
        # offset_index / time_index load them on first use, under _index_lock.
        self._offset_index: OffsetIndex | None = OffsetIndex(self.offset_index_path, base_offset)
        self._time_index: TimeIndex | None = TimeIndex(self.time_index_path, base_offset)
        self._lazy_last: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None)
        self._index_lock = threading.Lock()
        self.txn_index = TransactionIndex(directory / (name + TXN_INDEX_SUFFIX), base_offset)
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp = -1
        self._bytes_since_index = 0
        self.verifier = SegmentVerifier(self)

    # -- construction -----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        created_ms: int,
        fd_cache: FdCache | None = None,
    ) -> LogSegment:
        """Open (or create) the segment files; indexes are NOT loaded: call a load method.

        The descriptor lives in ``fd_cache`` (default: the process-wide cache)."""
        path = directory / (segment_name(base_offset) + LOG_SUFFIX)
        file = (fd_cache or shared_fd_cache()).file(path, create=True)
        try:
            size = file.size()
        except BaseException:
            file.close()
            raise
        seg = cls(directory, base_offset, file, size, index_interval_bytes, created_ms)
        seg.txn_index = TransactionIndex.load(seg.txn_index.path, base_offset)
        if size == 0:
            seg.offset_index_path.touch()
            seg.time_index_path.touch()
        return seg

    # -- lazy indexes (Kafka's LazyIndex) ---------------------------------------------------

    @property
    def offset_index(self) -> OffsetIndex:
        """The offset index, read from its file on first use after :meth:`open_lazily`."""
        index = self._offset_index
        return index if index is not None else self._load_lazy_indexes()[0]

    @property
    def time_index(self) -> TimeIndex:
        """The time index, read from its file on first use after :meth:`open_lazily`."""
        index = self._time_index
        return index if index is not None else self._load_lazy_indexes()[1]

    @property
    def indexes_loaded(self) -> bool:
        """False while a lazily opened segment has not read its index files yet."""
        return self._offset_index is not None and self._time_index is not None

    def open_lazily(self, next_base: int | None) -> bool:
        """Load a trusted segment (cleanly closed, or fsynced below the recovery point)
        without reading its index files: O(1) per segment, whatever its size.

        Reads the first and last entry of each index file and replays the batch headers
        (no CRC) from the last offset-index entry to the end of the file, which sets
        ``next_offset`` and the max timestamp exactly as :meth:`load_trusted` would (the
        time index's last entry, else the batches after the last offset-index entry).
        The whole files are read (and fully checked) on first use of
        :attr:`offset_index` / :attr:`time_index`.  Returns False, changing nothing, when
        a check fails (a file missing or of a bad size, an entry outside the segment, the
        last entry not at a batch of its offset, the headers not ending at the file's
        end, offsets reaching ``next_base``); the caller then uses :meth:`load_trusted`,
        which rebuilds what is inconsistent.
        """
        offset_edges = OffsetIndex.read_edges(self.offset_index_path, self.base_offset)
        time_edges = TimeIndex.read_edges(self.time_index_path, self.base_offset)
        if offset_edges is None or time_edges is None:
            return False
        start, key = 0, None
        if offset_edges:
            (first_key, _p), (key, start) = offset_edges
            if first_key < self.base_offset or not 0 <= start < self.size:
                return False
        self._reset_state()
        end = start
        for pos, header in self.scan(start, verify=False):
            if key is not None and header.base_offset != key:
                break
            key = None
            self._track(header, pos)
            end = pos + header.size
        if (
            key is not None
            or end != self.size
            or (next_base is not None and self.next_offset > next_base)
            or (time_edges and not self._time_edges_fit(time_edges))
        ):
            self._reset_state()
            return False
        if time_edges and time_edges[1][0] > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = time_edges[1]
        self._first_batch_timestamp()
        self._lazy_last = (
            offset_edges[1] if offset_edges else None,
            time_edges[1] if time_edges else None,
        )
        self._offset_index = self._time_index = None
        return True

    def _time_edges_fit(self, edges: list[tuple[int, int]]) -> bool:
        return all(self.base_offset <= offset < self.next_offset for _ts, offset in edges)

    def _load_lazy_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        with self._index_lock:
            if self._offset_index is None or self._time_index is None:
                self._offset_index, self._time_index = self._read_lazy_indexes()
            return self._offset_index, self._time_index

    def _read_lazy_indexes(self) -> tuple[OffsetIndex, TimeIndex]:
        """The whole index files, fully checked and still ending with the entries seen by
        :meth:`open_lazily`; else indexes rebuilt from the batch headers (no CRC:
        serving verifies batches anyway) and rewritten.  Never changes ``next_offset``
        or the timestamps: when the headers disagree with them the segment is served
        without index (lookups walk from its start, verified) and an ERROR is logged."""
        offset_index = OffsetIndex.load(self.offset_index_path, self.base_offset, self.size)
        time_index = TimeIndex.load(self.time_index_path, self.base_offset, self.next_offset)
        if (
            offset_index is not None
            and time_index is not None
            and _last_entry(offset_index) == self._lazy_last[0]
            and _last_entry(time_index) == self._lazy_last[1]
        ):
            return offset_index, time_index
        log.warning(
            "index files of %s are inconsistent or changed since the start; rebuilding "
            "them from its batch headers",
            self.log_path,
        )
        offset_index = OffsetIndex(self.offset_index_path, self.base_offset)
        time_index = TimeIndex(self.time_index_path, self.base_offset)
        since, max_ts, next_offset, end = 0, -1, self.base_offset, 0
        for pos, header in self.scan(0, verify=False):
            if pos > 0 and since >= self.index_interval_bytes:  # _track's rule
                offset_index.append(header.base_offset, pos)
                time_index.append(max_ts, next_offset - 1)
                since = 0
            since += header.size
            max_ts = max(max_ts, header.max_timestamp)
            next_offset, end = header.next_offset, pos + header.size
        if end != self.size or next_offset != self.next_offset:
            log.error(
                "batch headers of %s end at byte %d (offset %d), not at byte %d (offset "
                "%d) as at the start: serving it without index",
                self.log_path,
                end,
                next_offset,
                self.size,
                self.next_offset,
            )
            return (
                OffsetIndex(self.offset_index_path, self.base_offset),
                TimeIndex(self.time_index_path, self.base_offset),
            )
        if max_ts >= 0:
            time_index.append(max_ts, next_offset - 1)  # seal()'s entry
        try:
            offset_index.rewrite()
            time_index.rewrite()
        except OSError as exc:  # kept in memory; written again at the next close
            log.warning("cannot rewrite the indexes of %s: %s", self.log_path, exc)
        return offset_index, time_index

    def load_trusted(self, next_base: int | None) -> None:
        """Load a segment that was fsynced before the crash (or cleanly closed).

        Indexes are taken from disk when consistent, else rebuilt by a CRC-checked scan,
        where any bad batch raises CorruptSegmentError (a sealed segment is never cut).
        """
        offset_index = OffsetIndex.load(self.offset_index.path, self.base_offset, self.size)
        if offset_index is None:
            self.rebuild(sealed=True)
            return
        start = offset_index.values[-1] if len(offset_index) else 0
        self._offset_index = offset_index
        self._bytes_since_index = 0
        valid_end = self._replay(start, verify=False)
        if valid_end != self.size:
            self.rebuild(sealed=True)
            return
        time_index = TimeIndex.load(self.time_index.path, self.base_offset, self.next_offset)
        if time_index is None or (next_base is not None and self.next_offset > next_base):
            self.rebuild(sealed=True)
            return
        if len(time_index) and time_index.keys[-1] > self.max_timestamp:
            self.max_timestamp = time_index.keys[-1]
            self.offset_of_max_timestamp = time_index.values[-1]
        self._time_index = time_index
        self._first_batch_timestamp()

    def rebuild(self, *, sealed: bool) -> int:
        """CRC-check every batch and rebuild both indexes; returns the valid byte length.

        ``sealed`` segments must be intact: a bad batch raises CorruptSegmentError naming
        the file and position.  For the active segment the caller truncates instead.
        """
        self._reset_state()
        valid_end = self._replay(0, verify=True)
        self.verifier.mark_verified(valid_end, self.next_offset)
        if valid_end != self.size and sealed:
            raise CorruptSegmentError(
                f"corrupt record batch in sealed segment {self.log_path} at byte {valid_end} "
                f"({self.describe_end()}); refusing to truncate it"
            )
        self.offset_index.rewrite()
        self.time_index.rewrite()
        return valid_end

    def recover(self, recovery_point: int) -> int:
        """The unclean load of a segment reaching past ``recovery_point``: like
        ``rebuild(sealed=False)`` but without re-reading what was fsynced before the
        checkpoint; returns where the valid batches end (the caller cuts or refuses).

        Index entries for batches below the recovery point were written before the
        fsync that the checkpoint records, so, as after a clean shutdown
        (:meth:`load_trusted`), the index files are trusted up to there when they are
        consistent: the batches from the last offset-index entry at or below both the
        recovery point and the time index's coverage on are CRC-checked and indexed,
        the prefix before it is not read (it is verified before it is first served,
        :mod:`riverbed.storage.verify`).  Without a usable entry this is ``rebuild``.
        """
        start = self._trusted_prefix(recovery_point) if recovery_point > self.base_offset else 0
        if start == 0:
            return self.rebuild(sealed=False)
        return self._replay(start, verify=True)

    def _trusted_prefix(self, recovery_point: int) -> int:
        """Load the index entries below ``recovery_point`` and the state they imply;
        the byte position to CRC-check from (0: nothing usable, state untouched)."""
        offset_index = OffsetIndex.load(self.offset_index_path, self.base_offset, self.size)
        time_index = TimeIndex.load(self.time_index_path, self.base_offset, _NO_LIMIT)
        if offset_index is None or time_index is None or not len(time_index):
            return 0
        # A time-index entry (T, O) is written with the offset-index entry at O + 1, so
        # entries up to there cover every batch before it, even in a short file.
        limit = min(recovery_point, time_index.values[-1] + 1)
        i = bisect.bisect_right(offset_index.keys, limit) - 1
        if i < 0:
            return 0
        key, start = offset_index.keys[i], offset_index.values[i]
        head = self.pread(start, HEADER_SIZE)
        try:
            if len(head) < HEADER_SIZE or BatchHeader.parse(head).base_offset != key:
                return 0
        except CorruptRecordError:
            return 0
        offset_index.truncate_to(key + 1)
        time_index.truncate_to(key)
        if not len(time_index):
            return 0
        self._reset_state()
        self._offset_index, self._time_index = offset_index, time_index
        self.max_timestamp, self.offset_of_max_timestamp = (
            time_index.keys[-1],
            time_index.values[-1],
        )
        self.next_offset = key
        self._first_batch_timestamp()
        return start

    def describe_end(self) -> str:
        """Where the valid batches end, for error messages."""
        if self.next_offset == self.base_offset:
            return "the segment's first batch"
        return f"after offset {self.next_offset - 1}"

    def _reset_state(self) -> None:
        """Forget every entry in memory (fresh, loaded indexes; the files are left alone
        until a rewrite)."""
        self._offset_index = OffsetIndex(self.offset_index_path, self.base_offset)
        self._time_index = TimeIndex(self.time_index_path, self.base_offset)
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.first_batch_timestamp = -1
        self._bytes_since_index = 0

    def _replay(self, start: int, *, verify: bool) -> int:
        """Track every batch from ``start``; returns where the valid batches end."""
        end = start
        batches = self._scan_verified(start) if verify else self.scan(start, verify=False)
        for pos, header in batches:
            self._track(header, pos)
            end = pos + header.size
        return end

    def _scan_verified(self, start: int) -> Iterator[tuple[int, BatchHeader]]:
        """:meth:`scan` with ``verify`` (the same checks, the same stop), reading the file
        :data:`_SCAN_CHUNK` bytes at a time: one ``pread`` per MiB instead of two per
        batch, for recovery's CRC check (small batches were syscall-bound)."""
        limit = self.size
        pos, min_base = start, self.base_offset
        buf, at = b"", start  # buf holds the file's bytes [at, at + len(buf))
        while pos + HEADER_SIZE <= limit:
            if pos + HEADER_SIZE > at + len(buf):
                buf, at = self.pread(pos, min(_SCAN_CHUNK, limit - pos)), pos
            try:
                header = BatchHeader.parse(buf, pos - at)
            except CorruptRecordError:
                return
            if not _header_fits(header, pos, limit, min_base):
                return
            if pos + header.size > at + len(buf):
                buf, at = self.pread(pos, min(max(_SCAN_CHUNK, header.size), limit - pos)), pos
            try:
                validate_batch(buf, pos - at)
            except CorruptRecordError:
                return
            yield pos, header
            pos += header.size
            min_base = header.next_offset

    def _first_batch_timestamp(self) -> None:
        if self.size >= HEADER_SIZE:
            try:
                header = BatchHeader.parse(self.pread(0, HEADER_SIZE))
            except CorruptRecordError:  # found when served; rolls then go by wall clock
                return
            self.first_batch_timestamp = header.max_timestamp

    # -- append / read ----------------------------------------------------------------

    def _track(self, header: BatchHeader, position: int) -> None:
        if self._bytes_since_index >= self.index_interval_bytes or position == 0:
            if position > 0:
                self.offset_index.append(header.base_offset, position)
                self.time_index.append(self.max_timestamp, self.next_offset - 1)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        if self.first_batch_timestamp < 0 and position == 0:
            self.first_batch_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        self.next_offset = header.next_offset

    def append(
        self,
        data: bytes | bytearray | memoryview | Sequence[bytes | bytearray | memoryview],
        headers: list[tuple[int, BatchHeader]],
    ) -> None:
        """Write ``data`` (whole batches, offsets assigned) at the end: one buffer with one
        ``pwrite``, or a sequence of buffers written back to back with one ``pwritev``
        (the produce path passes each batch's new base offset beside the rest of the
        batch as the request carried it, so nothing is copied).  ``headers`` positions
        are relative to the first byte written.  A failed write is cut off again
        (``ftruncate``) and raises StorageError."""
        position = self.size
        parts = [data] if isinstance(data, bytes | bytearray | memoryview) else data
        try:
            faults.point("segment.write", self.log_path)
            length = _write_all(self._file(), parts, position)
        except OSError as exc:
            self._file().ftruncate(position)
            self.allocated = position
            raise StorageError(f"write to {self.log_path} failed: {exc}") from exc
        self.size = position + length
        if self.size > self.allocated:
            self.allocated = self.size
        for rel, header in headers:
            self._track(header, position + rel)
        self.verifier.appended(position, self.size, self.next_offset)

    def pread(self, position: int, length: int) -> bytes:
        return self._file().pread(length, position)

    @property
    def fd(self) -> int:
        """The descriptor the fd cache holds open for the ``.log`` now, -1 when none
        (idle, evicted or closed); for tests and diagnostics only."""
        return self.file.fd if self.file is not None else -1

    def _file(self) -> CachedFile:
        if self.file is None:
            raise OSError(errno.EBADF, f"{self.log_path} has no file (offline placeholder)")
        return self.file

    def scan(
        self, start: int = 0, *, verify: bool = True, end: int | None = None
    ) -> Iterator[tuple[int, BatchHeader]]:
        """Yield ``(position, header)`` of each whole batch from ``start``; stops at the
        first torn or (with ``verify``) corrupt batch, or at ``end``/the file end."""
        limit = self.size if end is None else end
        pos = start
        min_base = self.base_offset
        while pos + HEADER_SIZE <= limit:
            head = self.pread(pos, HEADER_SIZE)
            try:
                header = BatchHeader.parse(head)
            except CorruptRecordError:
                return
            if not _header_fits(header, pos, limit, min_base):
                return
            if verify:
                try:
                    validate_batch(self.pread(pos, header.size))
                except CorruptRecordError:
                    return
            yield pos, header
            pos += header.size
            min_base = header.next_offset

    def scan_checked(self, end: int) -> Iterator[tuple[int, BatchHeader]]:
        """Every batch of ``[0, end)``, CRC-checked; a bad or torn one raises
        CorruptSegmentError naming the file and byte instead of ending the scan early.

        For whole-segment readers outside the log's lock (the cleaner): it leaves the
        serving watermark alone.  A copy that stopped early would lose every later batch.
        """
        pos = 0
        for pos, header in self.scan(0, verify=True, end=end):
            yield pos, header
            pos += header.size
        if pos != end:
            raise CorruptSegmentError(
                f"corrupt record batch in {self.log_path} at byte {pos} of {end}; "
                "it is left as it is"
            )

    def locate(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        start = self.offset_index.lookup(offset)
        for pos, header in self.scan(start, verify=False):
            if header.last_offset >= offset:
                return pos, header
        return None

    # -- verified serving (riverbed.storage.verify) -----------------------------------------

    @property
    def verified_to(self) -> int:
        """Bytes ``[0, verified_to)`` were verified by this process (serving watermark)."""
        return self.verifier.verified_to

    def locate_verified(self, offset: int) -> tuple[int, BatchHeader] | None:
        """:meth:`locate` that verifies every batch it walks (:class:`SegmentVerifier`)."""
        return self.verifier.locate(offset)

    def read_verified(self, position: int, max_bytes: int, *, min_one_batch: bool) -> bytes:
        """:meth:`read` cut before the first batch that fails verification; raises
        CorruptSegmentError when the first batch itself fails."""
        return self.verifier.read(position, max_bytes, min_one_batch=min_one_batch)

    def verify_through(self, end: int) -> None:
        self.verifier.verify_through(end)

    def read(self, position: int, max_bytes: int, *, min_one_batch: bool) -> bytes:
        """Whole batches from ``position``, at most ``max_bytes`` unless the first batch
        alone is bigger and ``min_one_batch`` is set.

        ``position`` must be a batch start.  A read that stops inside the segment ends
        at the last whole batch before ``position + max_bytes``, found through the
        offset index (:meth:`_batches_end`), so the one ``pread`` returns exactly whole
        batches: reading ``max_bytes`` and cutting off the partial last batch copied the
        whole read a second time (most of the broker's Fetch CPU for 1 KiB records).
        """
        want = min(max(max_bytes, 0), self.size - position)
        if 0 < want < self.size - position:
            cut = self._batches_end(position, position + want)
            if cut > position:
                data = self.pread(position, cut - position)
                if _whole_batches(data) == len(data):
                    return data
                # The index disagreed with the log: read and cut as below.
        data = self.pread(position, want) if want > 0 else b""
        end = _whole_batches(data)
        if end == 0 and min_one_batch and position + 12 <= self.size:
            size = int.from_bytes(self.pread(position + 8, 4), "big") + 12
            return self.pread(position, size)
        return data[:end]

    def _batches_end(self, position: int, limit: int) -> int:
        """The end of the last whole batch in ``[position, limit]`` (``position`` when
        the first batch alone is longer), ``limit`` inside the file.

        Starts at the offset index's last batch position at or below ``limit`` (or at
        ``position``) and walks batch lengths from there, one 4-byte ``pread`` per batch:
        at most one batch plus ``index.interval.bytes`` lie between two index entries.
        A wrong index entry only makes the result unusable; :meth:`read` checks it.
        """
        positions = self.offset_index.values
        i = bisect.bisect_right(positions, limit)
        end = positions[i - 1] if i and positions[i - 1] > position else position
        while end + 12 <= limit:
            size = int.from_bytes(self.pread(end + 8, 4), "big") + 12
            if size < HEADER_SIZE or end + size > limit:
                break
            end += size
        return end

    # -- maintenance ------------------------------------------------------------------

    def truncate_bytes(self, size: int) -> None:
        """Cut the file (and the logical end) to ``size`` bytes: a zero window goes too."""
        faults.point("segment.truncate", self.log_path)
        self._file().ftruncate(size)
        self.size = size
        self.allocated = size
        self.verifier.truncated(size, self.next_offset)  # truncate_to fixes next_offset

    def truncate_to(self, offset: int) -> int:
        """Remove batches whose last offset is >= ``offset``; returns bytes removed."""
        found = self.locate(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        self.truncate_bytes(position)
        self._reset_state()
        self._replay(0, verify=False)
        self.verifier.truncated(position, self.next_offset)
        self.offset_index.rewrite()
        self.time_index.rewrite()
        self.txn_index.truncate_from(offset)
        return removed

    def seal(self) -> None:
        """Called when the segment stops being active: final time-index entry, flush indexes."""
        if self.max_timestamp >= 0:
            self.time_index.append(self.max_timestamp, self.next_offset - 1)
        self.flush_indexes()

    def flush_indexes(self) -> None:
        """Append new index entries to the files (nothing for indexes never loaded)."""
        if not self.indexes_loaded:
            return
        faults.point("index.flush", self.log_path)
        self.offset_index.flush()
        self.time_index.flush()

    def fsync(self) -> None:
        """Make the ``.log`` (:meth:`sync_data`) and the ``.txnindex`` durable."""
        self.sync_data()
        self.txn_index.sync()

    def sync_data(self) -> None:
        """Make the ``.log``'s data and length durable: ``fdatasync`` (it commits the
        metadata a later read needs: size, block map; not timestamps), so an overwrite
        of pre-zeroed space (:mod:`riverbed.storage.preallocate`) flushes only data."""
        faults.point("segment.fsync", self.log_path, self.size)
        with self._file().use() as fd:
            _datasync(fd)

    def sync_data_on(self, ring: FsyncRing, done: Callable[[int], None]) -> None:
        """:meth:`sync_data` submitted to ``ring`` (on its loop thread): ``done(res)`` runs
        when it completes (``res`` 0 or minus an errno).  Raises OSError, with ``done``
        never called, if the failure point fires or the ring refuses the request.  The
        descriptor is pinned only while submitting: the kernel holds the file itself."""
        faults.point("segment.fsync", self.log_path, self.size)
        with self._file().use() as fd:
            ring.fdatasync(fd, done)

    def zero_fill(self, end: int) -> None:
        """Write zeros over ``[allocated, end)`` (page cache; the caller fsyncs), so later
        appends there overwrite allocated blocks.  Called under the log's lock, only on
        the active segment.  A failure (a full disk) is logged at DEBUG and leaves no
        window: appends then grow the file as without one; any zeros written stay
        (harmless: only zeros lie past ``size``, and :meth:`trim_zeros` cuts the file to
        ``size`` whatever its length)."""
        start = self.allocated
        if end <= start:
            return
        try:
            faults.point("segment.zero_fill", self.log_path, self.size)
            _write_all(self._file(), _zeros(end - start), start)
        except OSError as exc:
            log.debug("cannot pre-zero %s up to byte %d: %s", self.log_path, end, exc)
            self.allocated = max(self.allocated, end)  # length unknown: trim cuts anyway
            return
        self.allocated = end

    def trim_zeros(self) -> bool:
        """Cut the file to the logical end if a zero window lies after it (the caller
        fsyncs: a sealed segment before its roll fsync, the active one before a clean
        close); True if it cut.  Raises OSError from ``ftruncate``."""
        if self.allocated == self.size:
            return False
        faults.point("segment.truncate", self.log_path)
        self._file().ftruncate(self.size)
        self.allocated = self.size
        return True

    def zeros_from(self, position: int) -> bool:
        """True if every byte of the file from ``position`` to its end (``allocated``:
        at load, the file's length) is zero, i.e. preallocated space
        (:mod:`riverbed.storage.preallocate`), not a torn batch.  Reads in
        :data:`_SCAN_CHUNK` steps; for recovery."""
        end = self.allocated
        while position < end:
            chunk = self.pread(position, min(_SCAN_CHUNK, end - position))
            if not chunk or chunk.count(0) != len(chunk):
                return False
            position += len(chunk)
        return True

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    def rename_for_deletion(self) -> None:
        """Rename the files to ``<name>.deleted`` (the .log first: that rename removes the
        segment from the log); readers keep reading it, through its new name, until
        :meth:`delete`.  The descriptor is pinned across the rename, so no reader reopens
        the old name in between."""
        if self.file is not None and self.log_path.exists():
            with self.file.use():
                self.log_path = _rename_deleted(self.log_path)
                self.file.renamed(self.log_path)
        else:
            self.log_path = _rename_deleted(self.log_path)
        with self._index_lock:  # a lazy load reads them by their current names
            self.offset_index_path = _rename_deleted(self.offset_index_path)
            self.time_index_path = _rename_deleted(self.time_index_path)
            if self._offset_index is not None:
                self._offset_index.path = self.offset_index_path
            if self._time_index is not None:
                self._time_index.path = self.time_index_path
        self.txn_index.path = _rename_deleted(self.txn_index.path)

    def delete(self) -> None:
        self.close()
        for path in (
            self.log_path,
            self.offset_index_path,
            self.time_index_path,
            self.txn_index.path,
        ):
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, size={self.size}, next={self.next_offset})"


_datasync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync

_ZEROS = bytes(1 << 20)


def _zeros(length: int) -> list[memoryview]:
    """``length`` zero bytes as views of one shared buffer (no allocation per call)."""
    view = memoryview(_ZEROS)
    return [view[: min(length - i, len(_ZEROS))] for i in range(0, length, len(_ZEROS))]


def _header_fits(header: BatchHeader, pos: int, limit: int, min_base: int) -> bool:
    """The structural checks a scan makes on a batch header at ``pos`` before trusting
    its length (:meth:`LogSegment.scan` and its chunked twin ``_scan_verified`` stop
    where this is False): magic 2, a length that covers the header and ends by
    ``limit``, a non-negative offset delta, a base offset not below ``min_base`` (one
    past the previous batch).  Pre-zeroed space fails the length check."""
    return not (
        header.magic != 2
        or header.batch_length < HEADER_SIZE - 12
        or pos + header.size > limit
        or header.last_offset_delta < 0
        or header.base_offset < min_base
    )


def _whole_batches(data: bytes) -> int:
    """Length of the leading whole batches of ``data`` (by their length fields)."""
    end = 0
    while end + 12 <= len(data):
        size = int.from_bytes(data[end + 8 : end + 12], "big") + 12
        if end + size > len(data):
            break
        end += size
    return end


def _last_entry(index: OffsetIndex | TimeIndex) -> tuple[int, int] | None:
    return (index.keys[-1], index.values[-1]) if len(index) else None
