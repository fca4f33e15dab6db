"""Producer state: per producer id, its epoch, its last 5 batches and its open transaction.

This is Kafka's ``ProducerStateManager``.  For each ``producer_id`` we keep the current
``producer_epoch``, the metadata of the last :data:`BATCHES_PER_PRODUCER` batches
(first/last sequence, first/last offset), which is what a producer may retry
(``max.in.flight.requests.per.connection <= 5``), the coordinator epoch of its last
transaction marker and ``current_txn_first_offset``: the first offset of its ongoing
transaction on this partition (-1 when none).

Transactions (KIP-98): a transactional batch (attribute bit 4) of a producer with no
ongoing transaction starts one at its base offset; a control batch (COMMIT/ABORT marker,
:mod:`riverbed.protocol.control`) ends it (:meth:`ProducerStateManager.check_marker`,
Kafka's ``appendEndTxnMarker``): a marker whose epoch is older than the producer's is
refused (InvalidProducerEpochError: the producer was fenced), one whose coordinator
epoch is older than the last marker's too (TransactionCoordinatorFencedError).  A
non-transactional batch while the producer's transaction is open is refused
(InvalidTxnStateError).  The log's last stable offset is the smallest
``current_txn_first_offset`` (:meth:`ProducerStateManager.first_unstable_offset`).

Rules applied to each appended batch with ``producer_id >= 0`` (Kafka's checkSequence):

* ``epoch < current``                        -> InvalidProducerEpochError
* ``epoch > current``                        -> base sequence must be 0 (unless the
  producer is unknown); the producer's batches are forgotten
* same sequences as one of the last 5        -> duplicate: the broker answers with the
  original offsets and appends nothing
* otherwise the base sequence must follow the last one (wrapping at 2^31-1 to 0), except
  for an unknown producer, whose first batch may start anywhere -> else
  OutOfOrderSequenceError

Expiry (``producer.id.expiration.ms``, a broker setting, default 1 day): a producer
whose ``last_timestamp`` - the largest timestamp of its last batch, Kafka's
``ProducerStateEntry.lastTimestamp`` (record time under CreateTime) - is that old is
dropped by :meth:`ProducerStateManager.remove_expired`, which the log runs periodically
and after loading (so expired producers also vanish from later snapshots); never while
its transaction is open (Kafka keeps those too: the LSO depends on them).  A later
append from an expired producer is then that of an unknown producer: accepted with any
sequence and any epoch, as Kafka 4 does since KIP-360 (Kafka 2.5).  The broker never
answers UNKNOWN_PRODUCER_ID for it; the price, as in Kafka, is that a retry of a batch
written before the expiry is no longer recognised as a duplicate.

Snapshot file ``<20-digit offset>.snapshot`` holds the state after every batch below that
offset (big-endian)::

    version int16 = 2 | crc uint32 (CRC-32C of everything after it) | count int32 |
    count x ( producerId int64 | epoch int16 | lastTimestamp int64 |
              coordinatorEpoch int32 | currentTxnFirstOffset int64 (-1: none) | n int8 |
              n x ( firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 ) )

Version 1 (written before transactions) lacks the two transaction fields and is still
read (no transaction open, coordinator epoch -1).  This is not Kafka's
``ProducerSnapshot`` layout (which keeps only each producer's last batch, so a restart
would forget four of the five batches a producer may retry); the transaction fields are
the ones Kafka's has (``CoordinatorEpoch``, ``CurrentTxnFirstOffset``).

Snapshots are written (tmp + fsync + rename) for each rolled segment, with the state as
of the roll, once that segment's fsync is done (see ``PartitionLog.flush``), every
``PRODUCER_SNAPSHOT_INTERVAL_BYTES`` (64 MiB) of the active segment after the fsync that
covers them (the previous such one is then deleted), and at clean shutdown.  After a
crash the log loads the newest snapshot at or below its recovered end and replays batch
headers from there; a corrupt snapshot is deleted and an older one (or the log start)
used instead.  Not thread-safe: the owning log's lock guards it.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from riverbed.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from riverbed.protocol.batch import BatchHeader, crc32c
from riverbed.storage.atomic_file import write_atomically

BATCHES_PER_PRODUCER = 5
SNAPSHOT_SUFFIX = ".snapshot"
_HEAD = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhqb")  # snapshot version 1
_ENTRY_V2 = struct.Struct(">qhqiqb")
SNAPSHOT_VERSION = 2
_BATCH = struct.Struct(">iiqq")


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int
    last_timestamp: int = -1
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=BATCHES_PER_PRODUCER)
    )
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1  # -1: no transaction open

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.last_timestamp,
            deque(self.batches, maxlen=BATCHES_PER_PRODUCER),
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker at ``last_offset`` (Kafka's ``CompletedTxn``);
    ``first_offset`` is its first data offset (the marker's own offset when it had no
    data here)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (last_seq == 0x7FFFFFFF and next_seq == 0)


class ProducerStateManager:
    """Producer entries plus their snapshot files in the partition directory."""

    def __init__(self, directory: Path, expiration_ms: int = 86_400_000) -> None:
        self.directory = directory
        self.expiration_ms = expiration_ms
        self.entries: dict[int, ProducerStateEntry] = {}
        # producer id -> first offset of its open transaction, kept in step with
        # ``entries`` by every method that changes them (the LSO is read on every fetch)
        self._open: dict[int, int] = {}

    def _note(self, entry: ProducerStateEntry) -> None:
        if entry.current_txn_first_offset >= 0:
            self._open[entry.producer_id] = entry.current_txn_first_offset
        else:
            self._open.pop(entry.producer_id, None)

    def remove_expired(self, now_ms: int) -> int:
        """Drop producers whose last batch is ``expiration_ms`` old; returns how many."""
        expired = [
            pid
            for pid, e in self.entries.items()
            if now_ms - e.last_timestamp >= self.expiration_ms and e.current_txn_first_offset < 0
        ]
        for pid in expired:
            del self.entries[pid]
        return len(expired)

    # -- validation / update ----------------------------------------------------------

    def check(
        self, header: BatchHeader, base_offset: int, pending: dict[int, ProducerStateEntry]
    ) -> BatchMetadata | None:
        """Validate one batch about to be appended at ``base_offset``.

        ``pending`` holds entries already updated by earlier batches of the same append
        (so a multi-batch append is all-or-nothing); it is updated in place.  Returns the
        original batch's metadata when the batch is a duplicate, else None.
        """
        pid = header.producer_id
        if pid < 0:
            return None
        current = pending.get(pid) or self.entries.get(pid)
        epoch = header.producer_epoch
        first_seq, last_seq = header.base_sequence, header.last_sequence
        if current is not None:
            if epoch < current.producer_epoch:
                raise InvalidProducerEpochError(
                    f"producer {pid}: epoch {epoch} is older than current {current.producer_epoch}"
                )
            if epoch == current.producer_epoch:
                duplicate = current.find_duplicate(first_seq, last_seq)
                if duplicate is not None:
                    return duplicate
                if current.batches and not _in_sequence(current.batches[-1].last_seq, first_seq):
                    raise OutOfOrderSequenceError(
                        f"producer {pid}: sequence {first_seq} does not follow "
                        f"{current.batches[-1].last_seq}"
                    )
                entry = current.copy()
            else:
                if first_seq != 0:
                    raise OutOfOrderSequenceError(
                        f"producer {pid}: new epoch {epoch} must start at sequence 0, "
                        f"got {first_seq}"
                    )
                entry = ProducerStateEntry(
                    pid,
                    epoch,
                    -1,
                    deque(maxlen=BATCHES_PER_PRODUCER),
                    current.coordinator_epoch,
                    current.current_txn_first_offset,
                )
        else:
            entry = ProducerStateEntry(pid, epoch)
        if entry.current_txn_first_offset >= 0 and not header.is_transactional:
            raise InvalidTxnStateError(
                f"producer {pid}: non-transactional batch while its transaction from "
                f"offset {entry.current_txn_first_offset} is open"
            )
        last_offset = base_offset + header.last_offset_delta
        entry.batches.append(BatchMetadata(first_seq, last_seq, base_offset, last_offset))
        entry.last_timestamp = header.max_timestamp
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = base_offset
        pending[pid] = entry
        return None

    def check_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        offset: int,
        timestamp: int,
    ) -> tuple[ProducerStateEntry, CompletedTxn]:
        """Validate a COMMIT/ABORT marker about to be written at ``offset`` (Kafka's
        ``appendEndTxnMarker``); returns the updated entry (apply it with :meth:`commit`)
        and the transaction it completes.  Raises InvalidProducerEpochError for an epoch
        older than the producer's, TransactionCoordinatorFencedError for a coordinator
        epoch older than the producer's last marker's."""
        current = self.entries.get(producer_id)
        if current is None:
            entry = ProducerStateEntry(producer_id, producer_epoch)
        else:
            if producer_epoch < current.producer_epoch:
                raise InvalidProducerEpochError(
                    f"producer {producer_id}: marker epoch {producer_epoch} is older than "
                    f"current {current.producer_epoch} (fenced)"
                )
            if coordinator_epoch < current.coordinator_epoch:
                raise TransactionCoordinatorFencedError(
                    f"producer {producer_id}: marker from coordinator epoch "
                    f"{coordinator_epoch}, older than {current.coordinator_epoch}"
                )
            entry = current.copy()
            if producer_epoch != entry.producer_epoch:
                entry.producer_epoch = producer_epoch
                entry.batches.clear()
        first = entry.current_txn_first_offset
        completed = CompletedTxn(producer_id, first if first >= 0 else offset, offset, not commit)
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        return entry, completed

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction, or None."""
        return min(self._open.values()) if self._open else None

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is done: the first offset of the oldest *other*
        ongoing transaction, else one past its marker (Kafka's ``lastStableOffset``)."""
        offsets = [o for pid, o in self._open.items() if pid != completed.producer_id]
        return min(offsets) if offsets else completed.last_offset + 1

    def close_transaction(self, producer_id: int, first_offset: int = -1) -> None:
        """Recovery found the first batch of ``producer_id``'s open transaction gone,
        which only compaction of a *decided* transaction does (see
        ``PartitionLog._rebuild_producer_state``): move its start to ``first_offset``,
        its first remaining batch, or forget it (-1) when none remains."""
        entry = self.entries.get(producer_id)
        if entry is not None:
            entry.current_txn_first_offset = first_offset
            self._note(entry)

    def ongoing_transactions(self) -> dict[int, int]:
        """``producer id -> first offset`` of every open transaction."""
        return dict(self._open)

    def commit(self, pending: dict[int, ProducerStateEntry]) -> None:
        self.entries.update(pending)
        for entry in pending.values():
            self._note(entry)

    def replay(self, header: BatchHeader) -> None:
        """Apply a data batch read back from the log (recovery): no checks, last writer
        wins.  Control batches go to :meth:`replay_marker`."""
        pid = header.producer_id
        if pid < 0:
            return
        entry = self.entries.get(pid)
        if entry is None or entry.producer_epoch != header.producer_epoch:
            old = entry
            entry = ProducerStateEntry(pid, header.producer_epoch)
            if old is not None:
                entry.coordinator_epoch = old.coordinator_epoch
                entry.current_txn_first_offset = old.current_txn_first_offset
            self.entries[pid] = entry
        entry.batches.append(
            BatchMetadata(
                header.base_sequence, header.last_sequence, header.base_offset, header.last_offset
            )
        )
        entry.last_timestamp = header.max_timestamp
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
        self._note(entry)

    def replay_marker(
        self, header: BatchHeader, commit: bool, coordinator_epoch: int
    ) -> CompletedTxn:
        """Apply a COMMIT/ABORT marker read back from the log (recovery): no checks;
        returns the transaction it completed.  The caller computes the LSO for the
        aborted-transaction index with :meth:`last_stable_offset_after` *before*."""
        current = self.entries.get(header.producer_id)
        entry = (
            current
            if current is not None
            else ProducerStateEntry(header.producer_id, header.producer_epoch)
        )
        if entry.producer_epoch != header.producer_epoch:
            entry.producer_epoch = header.producer_epoch
            entry.batches.clear()
        first = entry.current_txn_first_offset
        completed = CompletedTxn(
            header.producer_id,
            first if first >= 0 else header.base_offset,
            header.base_offset,
            not commit,
        )
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = header.max_timestamp
        self.entries[header.producer_id] = entry
        self._note(entry)
        return completed

    # -- snapshots --------------------------------------------------------------------

    def snapshot_path(self, offset: int) -> Path:
        return self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        out = []
        for path in self.directory.glob("*" + SNAPSHOT_SUFFIX):
            stem = path.name[: -len(SNAPSHOT_SUFFIX)]
            if stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def write_snapshot(self, offset: int, data: bytes | None = None) -> None:
        """Write the snapshot at ``offset``: of the current state, or ``data`` taken
        earlier by :meth:`snapshot_data` (only the file is touched: safe outside the
        log's lock)."""
        write_atomically(self.snapshot_path(offset), self.snapshot_data() if data is None else data)

    def snapshot_data(self) -> bytes:
        """The current state encoded as a snapshot file (format in the module doc)."""
        body = bytearray()
        for entry in self.entries.values():
            body += _ENTRY_V2.pack(
                entry.producer_id,
                entry.producer_epoch,
                entry.last_timestamp,
                entry.coordinator_epoch,
                entry.current_txn_first_offset,
                len(entry.batches),
            )
            for m in entry.batches:
                body += _BATCH.pack(m.first_seq, m.last_seq, m.first_offset, m.last_offset)
        tail = struct.pack(">i", len(self.entries)) + bytes(body)
        return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(tail)) + tail

    def _read_snapshot(self, path: Path) -> dict[int, ProducerStateEntry] | None:
        data = path.read_bytes()
        if len(data) < _HEAD.size:
            return None
        version, crc, count = _HEAD.unpack_from(data, 0)
        if version not in (1, SNAPSHOT_VERSION) or crc32c(data[6:]) != crc:
            return None
        pos = _HEAD.size
        entries: dict[int, ProducerStateEntry] = {}
        try:
            for _ in range(count):
                if version == 1:
                    pid, epoch, last_ts, n = _ENTRY.unpack_from(data, pos)
                    pos += _ENTRY.size
                    entry = ProducerStateEntry(pid, epoch, last_ts)
                else:
                    pid, epoch, last_ts, coord, txn_first, n = _ENTRY_V2.unpack_from(data, pos)
                    pos += _ENTRY_V2.size
                    entry = ProducerStateEntry(
                        pid,
                        epoch,
                        last_ts,
                        coordinator_epoch=coord,
                        current_txn_first_offset=txn_first,
                    )
                for _ in range(n):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, pos)))
                    pos += _BATCH.size
                entries[pid] = entry
        except struct.error:
            return None
        return entries

    def load(self, log_start_offset: int, log_end_offset: int) -> int:
        """Load the newest valid snapshot in [log start, log end]; returns the offset from
        which the caller must replay batch headers.  Snapshots above the end are deleted."""
        self.entries = {}
        self._open = {}
        for offset in reversed(self.snapshot_offsets()):
            path = self.snapshot_path(offset)
            if offset > log_end_offset:
                path.unlink(missing_ok=True)
                continue
            if offset < log_start_offset:
                break
            entries = self._read_snapshot(path)
            if entries is None:
                path.unlink(missing_ok=True)
                continue
            self.entries = entries
            for entry in entries.values():
                self._note(entry)
            return offset
        return log_start_offset

    def truncate_snapshots(self, offset: int) -> None:
        """Delete snapshots above ``offset`` (log truncation)."""
        for o in self.snapshot_offsets():
            if o > offset:
                self.snapshot_path(o).unlink(missing_ok=True)

    def delete_snapshots_below(self, offset: int, keep: int = 2) -> None:
        """Retention: drop snapshots below the log start offset, keeping the newest ``keep``."""
        offsets = self.snapshot_offsets()
        for o in offsets[:-keep] if keep else offsets:
            if o < offset:
                self.snapshot_path(o).unlink(missing_ok=True)
