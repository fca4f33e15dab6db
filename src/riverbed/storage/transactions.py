"""What the log needs to serve transactions: isolation, markers, the LSO bound.

The log's side of KIP-98 (the coordinator's side is :mod:`riverbed.coordinator.transactions`):

* **Ongoing transactions** live in the producer state
  (:class:`~riverbed.storage.producer_state.ProducerStateEntry.current_txn_first_offset`),
  snapshotted with it and rebuilt by replay after a crash.
* **Last stable offset** (LSO) = the first offset of the oldest ongoing transaction, else
  the high watermark.  Everything below it is decided (committed, aborted, or not
  transactional).
* **Markers**: :meth:`~riverbed.storage.log.PartitionLog.append_control_marker` writes a
  COMMIT/ABORT control batch; an ABORT adds an :class:`~riverbed.storage.txn_index.AbortedTxn`
  to the active segment's ``.txnindex``.
* **read_committed** reads stop at the LSO (:func:`bound_batches`) and carry the aborted
  transactions overlapping the returned range (:func:`collect_aborted_transactions`),
  which the consumer uses to skip aborted data.

Pure functions over bytes and segment lists; the caller holds the log's lock.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from enum import IntEnum

from riverbed.errors import CorruptRecordError
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader
from riverbed.protocol.control import EndTransactionMarker, parse_control_record
from riverbed.protocol.records import read_batch
from riverbed.storage.segment import LogSegment
from riverbed.storage.txn_index import AbortedTxn

__all__ = [
    "AbortedBatches",
    "AbortedTxn",
    "CleanedTransactions",
    "IsolationLevel",
    "bound_batches",
    "collect_aborted_transactions",
    "read_marker",
]


class IsolationLevel(IntEnum):
    """Fetch's and ListOffsets' ``isolation_level`` (the wire values)."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


class AbortedBatches:
    """Which transactional batches belong to aborted transactions, for a walk over
    batches in offset order (the rule of Kafka's consumer and of its cleaner).

    Fed the aborted transactions whose marker is at or after the walk's start
    (:func:`collect_aborted_transactions`); before each batch of producer P, every
    aborted transaction with ``first_offset <=`` the batch's last offset is *reached*
    and P is aborting from there until its next control batch (which can only be that
    transaction's ABORT marker).  Not thread-safe.
    """

    def __init__(self, aborted: Iterable[AbortedTxn] = ()) -> None:
        self._pending: list[tuple[int, int]] = []  # (first offset, producer id)
        self._known: set[tuple[int, int]] = set()
        self._aborting: set[int] = set()
        self.add(aborted)

    def add(self, aborted: Iterable[AbortedTxn]) -> None:
        """More aborted transactions (a later Fetch answer); duplicates are ignored."""
        for txn in aborted:
            key = (txn.first_offset, txn.producer_id)
            if key not in self._known:
                self._known.add(key)
                heapq.heappush(self._pending, key)

    def is_aborted(self, header: BatchHeader) -> bool:
        """Observe the next batch; True when it is aborted transactional data."""
        pid = header.producer_id
        if pid < 0:
            return False
        while self._pending and self._pending[0][0] <= header.last_offset:
            self._aborting.add(heapq.heappop(self._pending)[1])
        if header.is_control:
            self._aborting.discard(pid)
            return False
        return header.is_transactional and pid in self._aborting


class CleanedTransactions:
    """One compaction pass's view of transactions (Kafka's ``CleanedTransactionMetadata``),
    fed every batch from the pass's first segment on, in offset order.

    :meth:`on_data` says whether a data batch is aborted (to be dropped); :meth:`on_marker`
    whether a marker still guards data: it does when any batch of its producer's
    transaction was seen since that producer's previous marker (committed data, or
    aborted data being dropped in this very pass).  A marker guarding nothing may be
    removed once its delete horizon has passed.  Unlike Kafka's, which is reset per
    group of segments, the view spans the whole pass, so a marker is never removed
    while data of its transaction remains in an earlier group.  Not thread-safe.
    """

    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._aborted = AbortedBatches(aborted)
        self._with_data: set[int] = set()

    def on_data(self, header: BatchHeader) -> bool:
        """Observe a data batch; True when it is aborted transactional data."""
        aborted = self._aborted.is_aborted(header)
        if header.is_transactional and header.producer_id >= 0:
            self._with_data.add(header.producer_id)
        return aborted

    def on_marker(self, header: BatchHeader) -> bool:
        """Observe a control batch; True when no data of its transaction is left."""
        self._aborted.is_aborted(header)
        guarding = header.producer_id in self._with_data
        self._with_data.discard(header.producer_id)
        return not guarding


def read_marker(raw: bytes) -> EndTransactionMarker:
    """The COMMIT/ABORT marker held by the control batch ``raw`` (whole batch bytes).

    Raises CorruptRecordError when the batch holds no control record."""
    header, records = read_batch(raw)
    if not header.is_control or not records:
        raise CorruptRecordError(f"batch at offset {header.base_offset} is no control batch")
    return parse_control_record(records[0])


def bound_batches(data: bytes, max_offset: int) -> bytes:
    """The leading whole batches of ``data`` whose base offset is below ``max_offset``.

    A batch never straddles the LSO (it is the base offset of a transaction's first
    batch, one past a marker, or the log end), so this cuts exactly at it."""
    pos = 0
    while pos + HEADER_SIZE <= len(data):
        header = BatchHeader.parse(data, pos)
        if header.base_offset >= max_offset or pos + header.size > len(data):
            break
        pos += header.size
    return data[:pos]


def collect_aborted_transactions(
    segments: Sequence[LogSegment], start: int, upper: int
) -> list[AbortedTxn]:
    """Aborted transactions overlapping ``[start, upper)``: ``last_offset >= start`` and
    ``first_offset < upper`` (Kafka's ``collectAbortedTransactions``).

    Walks the ``.txnindex`` of every segment that may hold a marker at or after
    ``start`` (a marker lives in its own segment, its data may be earlier and the
    marker well past ``upper``), stopping once an entry's LSO reaches ``upper``: every
    transaction still open then started at or after ``upper``."""
    found: list[AbortedTxn] = []
    for seg in segments:
        if seg.next_offset <= start:
            continue
        entries, complete = seg.txn_index.collect(start, upper)
        found.extend(entries)
        if complete:
            break
    return found
