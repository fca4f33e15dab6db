"""The flushed position of a partition: a lower bound of its acknowledged prefix.

``flushed.mark`` (binary, exactly 32 bytes, big-endian, rewritten in place)::

    magic        4 bytes   b"RBFM"
    segment_base int64     base offset of the segment the position is in
    offset       int64     every batch below this offset was fsynced (flushed_offset)
    position     int64     byte length of that segment's fsynced prefix
    crc          uint32    CRC-32C of the 28 bytes before it

Written by :meth:`PartitionLog.flush` *after* each fsync of the active segment (just
after that fsync's waiters are resolved), with one ``pwrite`` at offset 0 and no fsync of
its own (:class:`FlushMarkFile`: the descriptor stays open between flushes, in the
process-wide :mod:`~riverbed.storage.fd_cache`, so a flush pays one system call for the
mark, not open/pwrite/close; the bytes written and their order are the same): it
reaches the disk with the kernel's write-back or the next checkpoint, so after a process
crash (SIGKILL) it is exact (or the previous flush's, when the kill fell between the
waiters' wake-up and the write) and after a power loss it may be older (a lower bound,
still true).  Its content is only ever a position
that *was* fsynced when it was written, so it never claims too much; the one operation
that makes an old mark false, :meth:`PartitionLog.truncate_to`, resets it durably
(:func:`reset_flush_mark`) before cutting the log.

A torn or garbage mark fails its CRC and reads as "nothing known" (``None``) with a
WARNING; recovery then falls back to ``partition.checkpoint``'s recovery point.

Recovery (:mod:`riverbed.storage.recovery`) treats an invalid batch *below* the mark as
corruption of acknowledged data, and only one *above* it as a torn write.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path

from riverbed.protocol.batch import crc32c
from riverbed.storage.atomic_file import fsync_dir
from riverbed.storage.fd_cache import CachedFile, FdCache
from riverbed.storage.fd_cache import shared as shared_fd_cache

log = logging.getLogger(__name__)

FLUSH_MARK_FILE = "flushed.mark"
_MAGIC = b"RBFM"
_BODY = struct.Struct(">4sqqq")
_CRC = struct.Struct(">I")
MARK_SIZE = _BODY.size + _CRC.size


@dataclass(frozen=True, slots=True)
class FlushMark:
    segment_base: int
    offset: int
    position: int


def encode(mark: FlushMark) -> bytes:
    body = _BODY.pack(_MAGIC, mark.segment_base, mark.offset, mark.position)
    return body + _CRC.pack(crc32c(body))


class FlushMarkFile:
    """The mark of one partition directory, rewritten in place through a kept descriptor.

    The descriptor is a :class:`~riverbed.storage.fd_cache.CachedFile` (``fd_cache``,
    default the process-wide cache), so the marks of many partitions never decide the
    process's descriptor count: an evicted one is reopened on the next write.  The file is
    created on the first write, and again after :meth:`reset` removed it (or if it vanished
    while its descriptor was evicted); a failed write drops the descriptor, so the next
    write starts from a fresh ``open`` as every write once did.

    Not thread-safe: :class:`~riverbed.storage.log.PartitionLog` calls it under its flush
    lock.  :meth:`close` releases the descriptor (writes nothing).
    """

    __slots__ = ("_cache", "_file", "directory")

    def __init__(self, directory: Path, fd_cache: FdCache | None = None) -> None:
        self.directory = directory
        self._cache = fd_cache
        self._file: CachedFile | None = None

    def write(self, mark: FlushMark) -> None:
        """Overwrite the mark in place (no fsync, see the module docstring); raises
        OSError (the descriptor is then dropped)."""
        data = encode(mark)
        file = self._file
        try:
            if file is None:
                cache = self._cache or shared_fd_cache()
                file = self._file = cache.file(self.directory / FLUSH_MARK_FILE, create=True)
            try:
                file.pwrite(data, 0)
            except FileNotFoundError:  # evicted, then removed behind our back: recreate
                self.close()
                cache = self._cache or shared_fd_cache()
                file = self._file = cache.file(self.directory / FLUSH_MARK_FILE, create=True)
                file.pwrite(data, 0)
        except OSError:
            self.close()
            raise

    def reset(self) -> None:
        """Drop the descriptor, then remove the mark durably (:func:`reset_flush_mark`);
        a later :meth:`write` creates it afresh."""
        self.close()
        reset_flush_mark(self.directory)

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()


def reset_flush_mark(directory: Path) -> None:
    """Remove the mark durably (before an operation that cuts fsynced data)."""
    path = directory / FLUSH_MARK_FILE
    if path.exists():
        path.unlink()
        fsync_dir(directory)


def read_flush_mark(directory: Path) -> FlushMark | None:
    """The mark, or None when absent or unreadable (a WARNING names the file)."""
    path = directory / FLUSH_MARK_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) == MARK_SIZE:
        body = data[: _BODY.size]
        magic, base, offset, position = _BODY.unpack(body)
        (crc,) = _CRC.unpack_from(data, _BODY.size)
        if magic == _MAGIC and crc == crc32c(body) and min(base, offset, position) >= 0:
            return FlushMark(base, offset, position)
    log.warning(
        "ignoring unreadable %s (%d bytes): recovery falls back to the recovery "
        "point of partition.checkpoint",
        path,
        len(data),
    )
    return None
