"""A segment's aborted-transaction index (``<base>.txnindex``, Kafka's ``TransactionIndex``).

One entry per transaction aborted by an ABORT marker written *in this segment*, in marker
order, 34 bytes each, big-endian, no header (byte for byte Kafka's ``AbortedTxn``)::

    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 |
    lastStableOffset int64

``firstOffset`` is the transaction's first data offset on this partition (possibly in an
earlier segment), ``lastOffset`` the offset of the ABORT marker, ``lastStableOffset`` the
partition's LSO once the transaction was completed (the first offset of the oldest other
ongoing transaction, else ``lastOffset + 1``).  So ``lastOffset`` strictly increases along
the file and lies in ``[base, next segment base)``.  The file exists only once a segment
has an entry (an absent file reads as empty; Kafka creates it lazily too).

Read-committed Fetch asks :meth:`TransactionIndex.collect` for the entries overlapping
``[fetch offset, upper bound)``; the consumer drops those producers' data from
``firstOffset`` until it meets their ABORT marker.

Crash behaviour: an append is one ``write`` of 34 bytes and is made durable by
:meth:`sync` (the segment's fsync).  A torn tail (size not a multiple of 34) is cut at
load; entries of markers the producer-state replay covers again are removed by
:meth:`truncate_from` and re-added by that replay (:meth:`PartitionLog._rebuild_producer_state`),
so after recovery the index matches the segment's markers exactly.

Not thread-safe: the owning log's lock serialises access.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from riverbed.storage import faults

TXN_INDEX_SUFFIX = ".txnindex"
ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction (Kafka's ``AbortedTxn``); Fetch sends ``producer_id`` and
    ``first_offset`` as its ``AbortedTransaction``."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, pos: int = 0) -> AbortedTxn:
        _version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        return cls(pid, first, last, lso)


def encode_entries(entries: Iterable[AbortedTxn]) -> bytes:
    return b"".join(e.encode() for e in entries)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """Whole entries of ``data`` (a torn tail is ignored)."""
    return [
        AbortedTxn.decode(data, pos)
        for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE)
    ]


class TransactionIndex:
    """The aborted transactions whose markers are in one segment, mirrored in memory."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.entries: list[AbortedTxn] = []
        self._dirty = False

    @classmethod
    def load(cls, path: Path, base_offset: int) -> TransactionIndex:
        """Read ``path`` (absent = empty); a torn tail and entries out of order are cut
        from the file."""
        index = cls(path, base_offset)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return index
        entries = decode_entries(data)
        good = 0
        for entry in entries:
            if entry.last_offset < base_offset or (
                good and entry.last_offset <= entries[good - 1].last_offset
            ):
                break
            good += 1
        index.entries = entries[:good]
        if good * ENTRY_SIZE != len(data):
            index._rewrite()
        return index

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, entry: AbortedTxn) -> None:
        """Add the entry of an ABORT marker just appended to the segment."""
        if self.entries and entry.last_offset <= self.entries[-1].last_offset:
            raise ValueError(
                f"aborted transaction {entry} does not follow {self.entries[-1]} in {self.path}"
            )
        faults.point("index.flush", self.path)
        with open(self.path, "ab") as f:
            f.write(entry.encode())
        self.entries.append(entry)
        self._dirty = True

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries with ``last_offset >= fetch_offset`` and ``first_offset < upper_bound``,
        and whether the search is complete (an entry's LSO reached ``upper_bound``:
        later segments cannot hold a transaction overlapping the range; Kafka's rule)."""
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_from(self, offset: int) -> None:
        """Drop the entries of markers at or above ``offset`` (log truncation, replay)."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) != len(self.entries):
            self.entries = keep
            self._rewrite()

    def replace(self, entries: Iterable[AbortedTxn]) -> None:
        self.entries = list(entries)
        self._rewrite()

    def _rewrite(self) -> None:
        faults.point("index.flush", self.path)
        if not self.entries:
            self.path.unlink(missing_ok=True)
        else:
            self.path.write_bytes(encode_entries(self.entries))
        self._dirty = True

    @property
    def dirty(self) -> bool:
        """Changed since the last :meth:`sync` (which then has an fsync to do)."""
        return self._dirty

    def sync(self) -> None:
        """fsync the file if it changed since the last sync (part of the segment's fsync)."""
        if not self._dirty:
            return
        if self.path.exists():
            faults.point("index.flush", self.path)
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._dirty = False
