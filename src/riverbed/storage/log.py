"""A partition's durable log: ordered segments, offsets, durability and maintenance.

Directory ``<data_dir>/<topic>-<partition>/`` holds the segments (see
:mod:`riverbed.storage.segment`), producer-state snapshots
(:mod:`riverbed.storage.producer_state`), ``partition.checkpoint`` and, after a clean
close, ``.clean_shutdown`` (:mod:`riverbed.storage.checkpoint`,
:mod:`riverbed.storage.clean_shutdown`).

Offsets: ``log_start_offset <= log_end_offset``; ``high_watermark == log_end_offset`` (a
single node has no followers to wait for).  Offsets are assigned at append and never
change: compaction removes records but never renumbers, so reads must tolerate gaps.

Durability: ``flushed_offset`` is the offset below which every batch has been fsynced;
``flush_future(o)`` resolves once ``flushed_offset > o`` (see docs/storage.md for the
three flush policies).  ``recovery_point`` in the checkpoint lags ``flushed_offset``.

Thread-safety: every public method may be called from any thread.  ``_lock`` serialises
appends, reads and metadata changes; fsyncs run outside it (under ``_flush_lock``) so
appends continue while the disk works.  Anything that closes a segment's file takes
``_flush_lock`` first, then ``_lock``.  ``_checkpoint_lock`` comes before both: the
periodic checkpoint's write holds it alone, so it never delays a flush, and everything
else that writes the checkpoint or changes an offset in it (retention, DeleteRecords,
truncation, the cleaner's offset, close and deletion) takes all three.

Rolling: the active segment rolls when the append would pass ``segment.bytes``, when
its relative offsets would overflow int32, or by age as Kafka measures it: the incoming
batch's largest timestamp minus the segment's first batch's timestamp exceeds
``segment.ms`` (``max.compaction.lag.ms`` if lower, on compacted topics).  Only a
segment whose first batch has no timestamp falls back to wall-clock time since it was
created.  So a restart (which "creates" every loaded segment anew) does not postpone a
roll.  A roll does no fsync: it seals the old segment and opens the next one under
``_lock``; the old segment's fsync, its producer snapshot and the directory fsync are
done by the next :meth:`PartitionLog.flush` (the flusher thread, requested at once; in
the caller only without one), as Kafka flushes rolled segments in the background.
``flushed_offset`` (hence every ``flush_future`` and the checkpoint's recovery point)
does not pass the old segment until that fsync is done.

Deleting segments (retention, DeleteRecords, truncation, compaction swaps) goes through
:mod:`riverbed.storage.deletion`: rename to ``.deleted`` now, remove after
``file.delete.delay.ms`` (:meth:`PartitionLog.delete_expired_files`).

Producer state expires as Kafka's does (``producer.id.expiration.ms``, see
:mod:`riverbed.storage.producer_state`): :meth:`PartitionLog.remove_expired_producers`.

Transactions (:mod:`riverbed.storage.transactions`): the producer state tracks each
producer's open transaction; ``last_stable_offset`` is the first offset of the oldest
open one (else the high watermark).  Client appends may not carry control batches; the
coordinator's markers go through :meth:`PartitionLog.append_control_marker`, which adds
each ABORT to the active segment's ``.txnindex`` (:mod:`riverbed.storage.txn_index`).
Recovery rebuilds both by replaying batches from the producer snapshot on: the open
transactions stay open until the coordinator writes their markers.

Crash behaviour: see :mod:`riverbed.storage.recovery`; an append is atomic with respect
to a crash only after its covering fsync.  A crash between a roll and the old segment's
fsync can leave a torn tail in a segment that is no longer the last: it lies above the
recovery point, so recovery checks it like the active segment, cuts the tail and drops
the segments after it (nothing in them was acknowledged).
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import heapq
import itertools
import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from riverbed.clock import SYSTEM_CLOCK, Clock
from riverbed.errors import (
    CorruptSegmentError,
    InvalidRecordError,
    LogClosedError,
    LogDeletedError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    ProtocolError,
    RecordBatchError,
    StorageError,
    describe_os_error,
)
from riverbed.protocol.batch import (
    ATTR_TIMESTAMP_TYPE,
    CRC_START,
    BatchHeader,
    crc32c,
    iter_batches,
    set_base_offset,
)
from riverbed.protocol.control import build_control_batch
from riverbed.storage import faults, retention
from riverbed.storage.atomic_file import fsync_dir, write_atomically
from riverbed.storage.checkpoint import PartitionCheckpoint, read_checkpoint, write_checkpoint
from riverbed.storage.clean_shutdown import consume_clean_shutdown, mark_clean_shutdown
from riverbed.storage.config import DAY_MS, FlushPolicy, LogConfig
from riverbed.storage.deletion import DeletionQueue
from riverbed.storage.flush_mark import FlushMark, FlushMarkFile
from riverbed.storage.flusher import GroupCommitFlusher
from riverbed.storage.preallocate import ZeroWindow
from riverbed.storage.producer_state import (
    CompletedTxn,
    ProducerStateEntry,
    ProducerStateManager,
)
from riverbed.storage.recovery import SWAP_END_SUFFIX, SWAP_SUFFIX, load_segments
from riverbed.storage.segment import LOG_SUFFIX, LogSegment, segment_name
from riverbed.storage.transactions import (
    IsolationLevel,
    bound_batches,
    collect_aborted_transactions,
    read_marker,
)
from riverbed.storage.txn_index import TXN_INDEX_SUFFIX, AbortedTxn, encode_entries
from riverbed.storage.uring import RingClosedError
from riverbed.storage.validation import validate_batches

if TYPE_CHECKING:
    from riverbed.storage.flusher import RingFinished
    from riverbed.storage.uring import FsyncRing

_logger = logging.getLogger(__name__)
_MAX_RELATIVE = 0x7FFFFFFF
PRODUCER_SNAPSHOT_INTERVAL_BYTES = 64 << 20
"""A flush writes a producer snapshot at its target offset once the active segment has
grown by this much since the last snapshot (a roll's or this one's), so recovery after a
crash replays at most this many bytes of batch headers, not the whole active segment."""
_ATTRS = struct.Struct(">h")
_BASE_OFFSET = struct.Struct(">q")
_TS = struct.Struct(">q")
_CRC = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class FetchResult:
    """``aborted_transactions`` is None under read_uncommitted; under read_committed the
    aborted transactions overlapping ``records`` (Fetch's ``aborted_transactions``)."""

    records: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int = -1
    aborted_transactions: tuple[AbortedTxn, ...] | None = None


def _chained(
    first: Callable[[], None] | None, second: Callable[[], None] | None
) -> Callable[[], None] | None:
    """One follow-up running ``first`` then ``second`` (either may be None)."""
    if first is None or second is None:
        return first or second

    def both() -> None:
        try:
            first()
        finally:
            second()

    return both


def _settle(fut: Future[None], exc: BaseException | None = None) -> None:
    """Resolve ``fut`` (or fail it with ``exc``) unless its waiter has cancelled it.

    A waiter cancels when it stops caring, e.g. a client disconnects while its acks=-1
    produce waits (``asyncio.wrap_future`` cancels the underlying future).  Never raises,
    so a cancelled future never stops a loop over the other waiters.
    """
    try:
        if exc is None:
            fut.set_result(None)
        else:
            fut.set_exception(exc)
    except InvalidStateError:
        pass  # cancelled (or, impossibly, already done): nobody is waiting for it


def _fsync_error(segment: LogSegment, res: int) -> StorageError:
    """The error a ring's failed fdatasync (``res``: minus an errno) of ``segment`` gives."""
    exc = OSError(-res, os.strerror(-res), str(segment.log_path))
    return StorageError(f"fsync of {segment.log_path} failed: {os_reason(exc)}")


def os_reason(exc: OSError) -> str:
    """One line for an OSError whose file the caller names itself: the reason and the
    errno's name, ``"no space left on device (ENOSPC)"``."""
    if exc.errno is None:
        return " ".join(str(exc).split())
    return describe_os_error(OSError(exc.errno, exc.strerror))


def _set_log_append_time(buf: bytearray, pos: int, header: BatchHeader, now_ms: int) -> None:
    """Mark the batch LogAppendTime with max timestamp ``now_ms`` and recompute its CRC."""
    _ATTRS.pack_into(buf, pos + 21, header.attributes | ATTR_TIMESTAMP_TYPE)
    _TS.pack_into(buf, pos + 35, now_ms)
    _CRC.pack_into(buf, pos + 17, crc32c(memoryview(buf)[pos + CRC_START : pos + header.size]))


class PartitionLog:
    """The log of one topic partition.  Open with :meth:`open`."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        clock: Clock,
        flusher: GroupCommitFlusher | None,
        producer_id_expiration_ms: int = DAY_MS,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self._config = config
        self._clock = clock
        self._flusher = flusher
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        # Serialises checkpoint writes with every change to the checkpointed offsets
        # but the flush's (see checkpoint()); taken before _flush_lock.
        self._checkpoint_lock = threading.Lock()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self._log_start_offset = 0
        self._flushed_offset = 0
        self._checkpointed: PartitionCheckpoint | None = None
        self._cleaner_offset = 0
        self._waiters: list[tuple[int, int, Future[None]]] = []
        self._seq = itertools.count()
        self._unflushed_messages = 0
        self._first_unflushed_mono_ms = -1
        # Under _lock: an append requested a flush that has not taken its target yet
        # (that flush covers every offset appended so far), and the target of the fsync
        # under way (-1: none).  A waiter that either covers needs no flush request.
        self._flush_pending = False
        self._flushing_to = -1
        self._closed = False
        self._deletions = DeletionQueue()
        # Segments sealed by a roll whose fsync is still owed, oldest first, each with
        # its producer snapshot as of its end (written after that fsync): see flush().
        self._rolled: list[tuple[LogSegment, bytes]] = []
        # Zeros kept ahead of the active segment's end while fsyncs are small
        # (riverbed.storage.preallocate); used under _flush_lock.
        self._zero_window = ZeroWindow()
        # (segment base, byte position) of the newest producer snapshot's offset, and the
        # offset of the last periodic one (replaced by the next), see flush()
        self._snapshot_at = (-1, 0)
        self._truncations = 0  # truncate_to calls: a snapshot taken before one is stale
        self._periodic_snapshot = -1
        self.snapshot_interval_bytes = PRODUCER_SNAPSHOT_INTERVAL_BYTES
        self._offline: CorruptSegmentError | None = None
        self._flush_mark = FlushMarkFile(directory)  # written and reset under _flush_lock
        # Set by begin_deletion: the topic is gone, so a request that found this log
        # before the deletion is answered as for an unknown partition (as Kafka does),
        # not as a storage failure.
        self._deleted = False
        self.producers = ProducerStateManager(directory, producer_id_expiration_ms)

    # -- opening ----------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        topic: str = "",
        partition: int = 0,
        clock: Clock = SYSTEM_CLOCK,
        flusher: GroupCommitFlusher | None = None,
        producer_id_expiration_ms: int = DAY_MS,
    ) -> PartitionLog:
        """Open or create the log in ``directory``, recovering it if it was not closed cleanly."""
        directory.mkdir(parents=True, exist_ok=True)
        self = cls(directory, topic, partition, config, clock, flusher, producer_id_expiration_ms)
        clean = consume_clean_shutdown(directory)
        cp = read_checkpoint(directory)
        try:
            self._segments = load_segments(
                directory,
                cp,
                clean=clean,
                index_interval_bytes=config.index_interval_bytes,
                now_ms=clock.now_ms(),
            )
        except CorruptSegmentError as exc:
            self._take_offline(cp, exc)
            return self
        self._bases = [s.base_offset for s in self._segments]
        end = self._segments[-1].next_offset
        self._log_start_offset = min(max(cp.log_start_offset, self._segments[0].base_offset), end)
        self._cleaner_offset = max(cp.cleaner_offset, self._log_start_offset)
        self._flushed_offset = end if clean else min(cp.recovery_point, end)
        self._rebuild_producer_state()
        self._checkpointed = cp
        if flusher is not None:
            flusher.register(self)
        return self

    def _take_offline(self, cp: PartitionCheckpoint, exc: CorruptSegmentError) -> None:
        """Recovery found damaged acknowledged data: serve nothing, touch nothing.

        The files stay exactly as found (no truncation, no checkpoint, no clean-shutdown
        marker, so the next start checks them again); every operation raises ``exc``
        (KAFKA_STORAGE_ERROR); other partitions are unaffected.
        """
        _logger.error(
            "partition %s is OFFLINE: %s. Its files are left untouched; see "
            "docs/storage.md (Recovery, offline) to inspect or accept the loss",
            self.directory,
            exc,
        )
        self._offline = exc
        self._closed = True
        base = cp.log_start_offset
        self._segments = [
            LogSegment(
                self.directory,
                base,
                None,
                0,
                self._config.index_interval_bytes,
                self._clock.now_ms(),
            )
        ]
        self._bases = [base]
        self._log_start_offset = self._flushed_offset = base

    @property
    def offline_error(self) -> CorruptSegmentError | None:
        """Why the partition is offline (recovery refused its files), or None."""
        return self._offline

    def _rebuild_producer_state(self) -> None:
        """Load the newest producer snapshot and replay the batches after it.

        The replay also rebuilds the ``.txnindex`` entries of the markers it covers
        (they are dropped first): entries of markers below the snapshot were fsynced
        with their segment before the snapshot was written, so after any crash each
        index holds exactly its segment's ABORT markers."""
        end = self._segments[-1].next_offset
        start = self.producers.load(self._log_start_offset, end)
        for pid, first in self.producers.ongoing_transactions().items():
            # An older snapshot may hold a transaction open whose data (and marker) the
            # cleaner has since removed: it only cleans decided transactions
            if self._log_start_offset <= first < start and not self._txn_starts(pid, first):
                self.producers.close_transaction(pid, self._first_txn_batch(pid, first, start))
        for seg in self._segments:
            # also where the replay has nothing to do: a marker cut off by recovery
            # (a torn tail) may have left its entry behind
            seg.txn_index.truncate_from(start)
            if seg.next_offset <= start:
                continue
            for pos, header in seg.scan(seg.offset_index.lookup(start), verify=False):
                if header.base_offset < start:
                    continue
                if header.is_control:
                    self._replay_marker(seg, pos, header)
                else:
                    self.producers.replay(header)
        self.producers.remove_expired(self._clock.now_ms())

    def _txn_starts(self, producer_id: int, offset: int) -> bool:
        """Whether a transactional batch of ``producer_id`` starts at ``offset``."""
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        found = self._segments[i].locate(offset)
        return (
            found is not None
            and found[1].base_offset == offset
            and (found[1].producer_id == producer_id and found[1].is_transactional)
        )

    def _first_txn_batch(self, producer_id: int, start: int, end: int) -> int:
        """The base offset of ``producer_id``'s first transactional batch in
        ``[start, end)``, or -1 (a header scan: recovery only)."""
        i = max(bisect.bisect_right(self._bases, start) - 1, 0)
        for seg in self._segments[i:]:
            if seg.base_offset >= end:
                break
            for _pos, header in seg.scan(seg.offset_index.lookup(start), verify=False):
                if header.base_offset >= end:
                    return -1
                if (
                    header.base_offset >= start
                    and header.producer_id == producer_id
                    and header.is_transactional
                    and not header.is_control
                ):
                    return header.base_offset
        return -1

    def _replay_marker(self, seg: LogSegment, pos: int, header: BatchHeader) -> None:
        try:
            marker = read_marker(seg.pread(pos, header.size))
        except (RecordBatchError, ProtocolError) as exc:
            _logger.warning(
                "%s: unreadable control batch at offset %d skipped: %s",
                seg.log_path,
                header.base_offset,
                exc,
            )
            return
        if marker.is_commit or marker.is_abort:
            completed = self.producers.replay_marker(
                header, marker.is_commit, marker.coordinator_epoch
            )
            if completed.is_aborted:
                seg.txn_index.append(self._aborted_entry(completed))

    def _aborted_entry(self, completed: CompletedTxn) -> AbortedTxn:
        return AbortedTxn(
            completed.producer_id,
            completed.first_offset,
            completed.last_offset,
            self.producers.last_stable_offset_after(completed),
        )

    # -- properties -------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._config

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        with self._lock:
            return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """The LSO: the first offset of the oldest open transaction, else the high
        watermark (never below the log start)."""
        with self._lock:
            return self._lso_locked()

    def _lso_locked(self) -> int:
        hw = self._segments[-1].next_offset
        first = self.producers.first_unstable_offset()
        return hw if first is None else max(min(first, hw), self._log_start_offset)

    def ongoing_transactions(self) -> dict[int, int]:
        """``producer id -> first offset`` of each open transaction (DescribeProducers)."""
        with self._lock:
            return self.producers.ongoing_transactions()

    def producer_states(self) -> list[ProducerStateEntry]:
        """A consistent copy of every producer's state (DescribeProducers), taken under
        ``_lock`` (held for the copy only: no disk I/O), so a caller on the event loop
        never iterates the live map while an append or expiry changes it."""
        with self._lock:
            return [entry.copy() for entry in self.producers.entries.values()]

    def collect_aborted_transactions(self, start: int, upper: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start, upper)`` (see
        :func:`riverbed.storage.transactions.collect_aborted_transactions`)."""
        with self._lock:
            self._check_open()
            return collect_aborted_transactions(self._segments, start, upper)

    @property
    def flushed_offset(self) -> int:
        return self._flushed_offset

    @property
    def durable_acks(self) -> bool:
        """True when the broker must await ``flush_future`` before acknowledging."""
        return self._config.flush_policy is FlushPolicy.PER_APPEND

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return sum(s.size for s in self._segments)

    def segments(self) -> list[LogSegment]:
        """A snapshot of the segment list (for maintenance and tests; do not mutate)."""
        with self._lock:
            return list(self._segments)

    def set_config(self, config: LogConfig) -> None:
        with self._lock:
            self._config = config

    # -- append -----------------------------------------------------------------------

    def append(
        self, records: bytes | bytearray | memoryview, *, check_producer: bool = True
    ) -> AppendResult:
        """Validate, assign offsets to and write the batches in ``records`` (one write).

        Raises CorruptRecordError / LegacyMessageFormatError (bad batch),
        InvalidTimestampError, InvalidRecordError (a key missing on a compacted topic,
        see :mod:`riverbed.storage.validation`), MessageTooLargeError,
        InvalidProducerEpochError, OutOfOrderSequenceError, LogClosedError.  A retry of
        one of a producer's last 5 batches returns the original offsets with
        ``duplicate=True`` and writes nothing.

        ``records`` is neither copied nor changed: each batch goes to the segment as
        its new base offset (8 bytes) followed by the rest of the batch as given, in one
        ``pwritev`` (the base offset is outside the CRC).  Only a LogAppendTime topic,
        whose timestamps and CRCs are rewritten, copies the batches first.
        """
        buf = records
        headers = list(iter_batches(buf))
        if not headers:
            raise InvalidRecordError("produce request carries no record batch")
        if any(h.is_control for _p, h in headers):
            raise InvalidRecordError("clients may not write control batches")
        limit = self._config.max_message_bytes
        for _pos, header in headers:
            if header.size > limit:
                raise MessageTooLargeError(
                    f"record batch of {header.size} bytes exceeds max.message.bytes {limit}"
                )
        config = self._config
        now_ms = self._clock.now_ms()
        validate_batches(buf, headers, config, now_ms, self.directory.name)
        with self._lock:
            self._check_open()
            first = self._segments[-1].next_offset
            count = sum(h.last_offset_delta + 1 for _p, h in headers)
            append_time = now_ms if config.message_timestamp_type == "LogAppendTime" else -1
            max_ts = append_time if append_time >= 0 else max(h.max_timestamp for _p, h in headers)
            offset = first
            pending: dict[int, ProducerStateEntry] = {}
            assigned: list[tuple[int, BatchHeader]] = []
            parts: list[bytes | bytearray | memoryview] = []
            if append_time >= 0:
                buf = bytearray(records)  # stamped in place below
            view = memoryview(buf)
            for pos, header in headers:
                if check_producer:
                    duplicate = self.producers.check(header, offset, pending)
                    if duplicate is not None:
                        return AppendResult(
                            duplicate.first_offset,
                            duplicate.last_offset,
                            -1,
                            self._log_start_offset,
                            duplicate=True,
                        )
                if append_time >= 0:
                    assert isinstance(buf, bytearray)
                    set_base_offset(buf, offset, pos)
                    _set_log_append_time(buf, pos, header, append_time)
                    assigned.append((pos, BatchHeader.parse(buf, pos)))
                else:
                    parts.append(_BASE_OFFSET.pack(offset))
                    parts.append(view[pos + 8 : pos + header.size])
                    assigned.append((pos, dataclasses.replace(header, base_offset=offset)))
                offset += header.last_offset_delta + 1
            rolled = self._maybe_roll(len(buf), first + count - 1, now_ms, max_ts)
            self._segments[-1].append(parts or buf, assigned)
            self.producers.commit(pending)
            request_flush = self._note_unflushed(len(headers))
        if request_flush or rolled:
            self._request_flush()
        return AppendResult(first, offset - 1, append_time, self._log_start_offset)

    def append_control_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> AppendResult:
        """Write a COMMIT (``commit``) or ABORT marker ending ``producer_id``'s
        transaction (WriteTxnMarkers; the transaction coordinator is the only caller).

        One transactional control batch at the log end, timestamped now; an ABORT adds
        ``(producer id, first offset, marker offset, LSO after it)`` to the active
        segment's ``.txnindex``.  A marker for a producer with no open transaction here
        is still written (Kafka does the same).  Raises InvalidProducerEpochError
        (epoch older than the producer's: fenced), TransactionCoordinatorFencedError,
        LogClosedError, StorageError.  Durable as any append: await ``flush_future``.
        """
        now_ms = self._clock.now_ms()
        with self._lock:
            self._check_open()
            offset = self._segments[-1].next_offset
            entry, completed = self.producers.check_marker(
                producer_id, producer_epoch, coordinator_epoch, commit, offset, now_ms
            )
            buf = bytearray(
                build_control_batch(
                    commit,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    timestamp=now_ms,
                    base_offset=offset,
                    coordinator_epoch=coordinator_epoch,
                )
            )
            header = BatchHeader.parse(buf)
            append_time = -1
            if self._config.message_timestamp_type == "LogAppendTime":
                append_time = now_ms
                _set_log_append_time(buf, 0, header, now_ms)
                header = BatchHeader.parse(buf)
            rolled = self._maybe_roll(len(buf), offset, now_ms, now_ms)
            seg = self._segments[-1]
            if completed.is_aborted:
                try:
                    seg.txn_index.append(self._aborted_entry(completed))
                except OSError as exc:
                    raise StorageError(
                        f"write to {seg.txn_index.path} failed: {os_reason(exc)}"
                    ) from exc
            try:
                seg.append(buf, [(0, header)])
            except BaseException:
                seg.txn_index.truncate_from(offset)
                raise
            self.producers.commit({producer_id: entry})
            request_flush = self._note_unflushed(1)
        if request_flush or rolled:
            self._request_flush()
        return AppendResult(offset, offset, append_time, self._log_start_offset)

    def _note_unflushed(self, batches: int) -> bool:
        policy = self._config.flush_policy
        if policy is FlushPolicy.OS:
            return False
        if self._first_unflushed_mono_ms < 0:
            self._first_unflushed_mono_ms = time.monotonic_ns() // 1_000_000
        self._unflushed_messages += batches
        if policy is FlushPolicy.PER_APPEND or (
            self._unflushed_messages >= self._config.flush_messages
        ):
            self._flush_pending = True  # the caller requests the flush
            return True
        return False

    def _check_open(self) -> None:
        if self._offline is not None:
            raise self._offline
        if self._deleted:
            raise LogDeletedError(f"{self.directory.name} was deleted")
        if self._closed:
            raise LogClosedError(f"log {self.directory.name} is closed")

    def _maybe_roll(self, incoming: int, last_offset: int, now_ms: int, max_ts: int) -> bool:
        """Roll if the append needs it; True if it rolled (the caller then requests the
        flush the roll owes, once it has released ``_lock``)."""
        active = self._segments[-1]
        if active.size == 0:
            return False
        first_ts = active.first_batch_timestamp
        waited = max_ts - first_ts if first_ts >= 0 else now_ms - active.created_ms
        if (
            active.size + incoming > self._config.segment_bytes
            or waited > self._config.max_segment_ms
            or last_offset - active.base_offset > _MAX_RELATIVE
        ):
            self._roll_locked(now_ms)
            return True
        return False

    def roll(self) -> None:
        """Force a new active segment (no-op when the active one is empty).  The old
        segment is fsynced by the flusher, or before this returns without one."""
        with self._lock:
            self._check_open()
            rolled = self._segments[-1].size > 0
            if rolled:
                self._roll_locked(self._clock.now_ms())
        if rolled:
            self._request_flush()

    def _roll_locked(self, now_ms: int) -> None:
        """Seal the active segment and open the next one; under ``_lock``, no fsync.

        The sealed segment joins ``_rolled`` with the producer snapshot as of its end;
        :meth:`flush` fsyncs it, writes the snapshot and fsyncs the directory (the new
        segment's entry), and only then lets ``flushed_offset`` pass it.  Raises
        StorageError if the new segment cannot be created (the log is unchanged).
        """
        old = self._segments[-1]
        base = old.next_offset
        try:
            faults.point("log.roll", self.directory)
            seg = LogSegment.open(
                self.directory,
                base,
                index_interval_bytes=self._config.index_interval_bytes,
                created_ms=now_ms,
            )
            try:
                old.seal()
            except BaseException:
                seg.close()
                raise
        except OSError as exc:
            raise StorageError(
                f"rolling {self.directory} at offset {base} failed: {os_reason(exc)}"
            ) from exc
        self._segments.append(seg)
        self._bases.append(base)
        self._rolled.append((old, self.producers.snapshot_data()))

    # -- durability -------------------------------------------------------------------

    def flush_future(self, offset: int, *, force: bool = False) -> Future[None]:
        """A future resolved once an fsync covering ``offset`` has completed.

        Under the OS policy it is resolved at once unless ``force`` (acks=all then means
        "appended", as with Kafka's defaults).  Under the interval policy it resolves at
        the next interval flush unless ``force`` asks for one now.  Without a background
        flusher the fsync happens in this call.
        """
        fut: Future[None] = Future()
        with self._lock:
            if offset < self._flushed_offset or (
                self._config.flush_policy is FlushPolicy.OS and not force
            ):
                fut.set_result(None)
                return fut
            self._check_open()
            heapq.heappush(self._waiters, (offset, next(self._seq), fut))
            now = force or self._config.flush_policy is FlushPolicy.PER_APPEND
            if offset < self._flushing_to or (
                self._flush_pending and offset < self._segments[-1].next_offset
            ):
                now = False  # the flush under way, or the one an append requested, covers it
        if now:
            self._request_flush()
        return fut

    def _request_flush(self) -> None:
        if self._flusher is not None and self._flusher.running:
            self._flusher.request(self)
        else:
            self.flush()

    def flush(self) -> int:
        """fsync everything appended so far; returns the new flushed offset.

        First the segments sealed by rolls since the last flush (oldest first, each
        followed by its producer snapshot, then one directory fsync for the new
        segments' entries), then the active segment, then, every
        :data:`PRODUCER_SNAPSHOT_INTERVAL_BYTES` of it, a producer snapshot at the
        target.  ``flushed_offset`` advances only when all of it is done, so it never
        passes a segment whose fsync is owed.
        """
        periodic: bytes | None = None  # a producer snapshot at the target, see below
        with self._flush_lock:
            try:
                with self._lock:
                    if self._closed:
                        return self._flushed_offset
                    self._flush_pending = False  # this flush covers what was requested
                    rolled = list(self._rolled)
                    active = self._segments[-1]
                    target = active.next_offset
                    if target <= self._flushed_offset and not rolled:
                        self._reset_unflushed()
                        ready = self._pop_waiters(self._flushed_offset)
                        flushed = self._flushed_offset
                    else:
                        active.flush_indexes()
                        mark = FlushMark(active.base_offset, target, active.size)
                        ready = None
                        periodic = self._periodic_snapshot_data(active, target)
                        self._flushing_to = target
            except OSError as exc:  # a full disk: nobody may wait for a retry that may not come
                self._fail_waiters(
                    StorageError(
                        f"writing the indexes of {active.log_path} failed: {os_reason(exc)}"
                    )
                )
                raise
            if ready is not None:
                for fut in ready:
                    _settle(fut)
                return flushed
            path = active.log_path
            try:
                for seg, snapshot in rolled:
                    path = seg.log_path
                    self._sync_rolled(seg, snapshot)
                if rolled:
                    path = self.directory
                    fsync_dir(self.directory)
                path = active.log_path
                active.fsync()
            except OSError as exc:
                failed = exc.filename or path  # a producer snapshot names its own file
                self._fail_waiters(StorageError(f"fsync of {failed} failed: {os_reason(exc)}"))
                raise
            with self._lock:
                synced = {id(seg) for seg, _d in rolled}
                self._rolled = [r for r in self._rolled if id(r[0]) not in synced]
                ready = self._flushed_to_locked(target)
            # The waiters first: the snapshot and the mark below are bookkeeping (neither
            # is fsynced here), and each of their syscalls hands the GIL back to a busy
            # event loop, whose next release this thread would wait for (up to the
            # interpreter's switch interval, 5 ms) before the acks could go out.
            for fut in ready:
                _settle(fut)
            if periodic is not None:
                self._write_periodic_snapshot(target, periodic)
            self._write_flush_mark(mark)
            self._keep_zero_window(mark)
        return target

    def flush_on_ring(self, ring: FsyncRing, finished: RingFinished) -> bool:
        """The common flush with its fdatasync on ``ring`` (:mod:`riverbed.storage.uring`),
        started on the ring's loop thread by the flusher: False, with nothing done, when
        this flush needs :meth:`flush` on a helper (``_flush_lock`` held elsewhere, a
        sealed segment's fsync owed, the ``.txnindex`` changed, the log closed, or a
        test armed the ``segment.fsync`` failure point: a fault that blocks or delays
        must hold up the fsync's thread, not the event loop).  With nothing new to
        flush (an earlier flush covered it) the waiters are answered here, no fsync.

        Same steps and order as :meth:`flush`: under ``_lock`` the indexes are written
        and the target taken; the fsync is submitted; when it completes (on the loop)
        ``flushed_offset`` advances, the waiters are answered, then the flushed mark is
        written (a small write to the page cache, as an append is), then, if the zero
        window wants extending, its zeros are written (page cache again, at most
        ``riverbed.log.zero.window.bytes``) and their fdatasync goes to the ring too.
        ``_flush_lock`` is taken without waiting and held until the last of these
        completes, so no checkpoint, retention, close or other flush of this log runs
        while an fsync of it is in the kernel: the one that wants it waits on its own
        thread.  A failed fsync fails the waiters as :meth:`flush` does.  A producer
        snapshot due at this flush (every :data:`PRODUCER_SNAPSHOT_INTERVAL_BYTES`) is
        taken under ``_lock`` with the target, as :meth:`flush` takes it, and written by
        the follow-up on a helper (a new file, its fsync, a rename and the directory's
        fsync: not work for the loop), after the waiters were answered; it is dropped
        if the log was truncated or closed meanwhile.  ``finished`` is called exactly
        once when True is returned (with a follow-up for a helper when a snapshot is
        due, the ring closed meanwhile or a test armed ``segment.zero_fill``)."""
        if faults.is_armed("segment.fsync") or not self._flush_lock.acquire(blocking=False):
            return False
        try:
            with self._lock:
                if self._closed or self._rolled:
                    self._flush_lock.release()
                    return False
                active = self._segments[-1]
                target = active.next_offset
                if active.txn_index.dirty:
                    self._flush_lock.release()
                    return False
                covered: list[Future[None]] | None = None
                if target <= self._flushed_offset:  # an earlier flush covered it all
                    self._reset_unflushed()
                    covered = self._pop_waiters(self._flushed_offset)
                else:
                    active.flush_indexes()
                    mark = FlushMark(active.base_offset, target, active.size)
                    snapshot_at = self._snapshot_at
                    periodic = self._periodic_snapshot_data(active, target)
                    truncations = self._truncations
                    self._flushing_to = target
                self._flush_pending = False
        except OSError:  # the indexes' write failed: flush() fails the waiters
            self._flush_lock.release()
            return False
        if covered is not None:
            self._flush_lock.release()
            for fut in covered:
                _settle(fut)
            finished(None)
            return True
        snapshot: Callable[[], None] | None = None
        if periodic is not None:
            data = periodic

            def snapshot() -> None:
                self._write_snapshot_tail(target, data, truncations)

        def done(res: int) -> None:
            nonlocal snapshot
            tail: Callable[[], None] | None = None
            zeros_on_ring = False
            try:
                if res < 0:
                    snapshot = None  # nothing became durable: no snapshot at the target
                    self._fail_waiters(_fsync_error(active, res))
                    return
                with self._lock:
                    ready = self._flushed_to_locked(target)
                for fut in ready:
                    _settle(fut)
                self._write_flush_mark(mark)
                self._zero_window.flushed(mark.segment_base, mark.position)
                if faults.is_armed("segment.zero_fill"):  # a fault there must not hold the loop
                    if self._zero_window_due(mark):
                        tail = self._extension_tail(mark)
                    return
                zeroed = self._zero_fill_for(mark)
                if zeroed is None:
                    return
                try:
                    zeroed.sync_data_on(ring, zeros_synced)
                    zeros_on_ring = True
                except RingClosedError:
                    tail = self._zeros_tail(zeroed)
                except OSError as exc:
                    self._fail_waiters(
                        StorageError(f"fsync of {zeroed.log_path} failed: {os_reason(exc)}")
                    )
            finally:
                if not zeros_on_ring:
                    self._flush_lock.release()
                    finished(_chained(tail, snapshot))

        def zeros_synced(res: int) -> None:
            try:
                if res < 0:
                    self._fail_waiters(_fsync_error(active, res))
            finally:
                self._flush_lock.release()
                finished(snapshot)

        try:
            active.sync_data_on(ring, done)
        except RingClosedError:  # the flusher is stopping: a helper (or close) flushes
            with self._lock:
                self._flushing_to = -1
                if periodic is not None:  # the helper's flush takes it instead
                    self._snapshot_at = snapshot_at
            self._flush_lock.release()
            return False
        except OSError as exc:
            self._fail_waiters(StorageError(f"fsync of {active.log_path} failed: {os_reason(exc)}"))
            self._flush_lock.release()
            finished(None)
        return True

    def _flushed_to_locked(self, target: int) -> list[Future[None]]:
        """Under ``_lock``, once everything below ``target`` is durable: advance the
        flushed offset, end the flush under way, and pop the waiters it answers."""
        self._flushed_offset = max(self._flushed_offset, target)
        self._flushing_to = -1
        if self._segments[-1].next_offset == target:
            self._reset_unflushed()
        return self._pop_waiters(self._flushed_offset)

    def _zero_window_due(self, mark: FlushMark) -> bool:
        """Under ``_flush_lock``: the zero window wants extending after this flush."""
        if self._config.flush_policy is not FlushPolicy.PER_APPEND:
            return False
        with self._lock:
            if self._closed:
                return False
            active = self._segments[-1]
            if active.base_offset != mark.segment_base:
                return False
            return bool(
                self._zero_window.plan(active.size, active.allocated, self._config.segment_bytes)
            )

    def _extension_tail(self, mark: FlushMark) -> Callable[[], None]:
        def extend() -> None:
            with self._flush_lock:
                self._extend_zero_window(mark)

        return extend

    def _zeros_tail(self, segment: LogSegment) -> Callable[[], None]:
        def sync() -> None:
            with self._flush_lock:
                self._sync_zeros(segment)

        return sync

    def _keep_zero_window(self, mark: FlushMark) -> None:
        """After a flush, under ``_flush_lock``, its waiters answered: extend the active
        segment's zero window if the policy wants it (:mod:`riverbed.storage.preallocate`),
        and fsync the zeros now, so the file's new blocks and length are committed here
        and not by the next acknowledgement's fsync.  The zeros are written under
        ``_lock`` (an append must not land in the range while it is zeroed).  A failed
        fsync fails the waiters as a failed flush does (an fsync error is reported once:
        the pages it lost may hold appends a later fsync would otherwise cover)."""
        self._zero_window.flushed(mark.segment_base, mark.position)
        self._extend_zero_window(mark)

    def _extend_zero_window(self, mark: FlushMark) -> None:
        """The second half of :meth:`_keep_zero_window` (the flush already counted):
        extend and fsync the zeros if the policy wants them now."""
        active = self._zero_fill_for(mark)
        if active is not None:
            self._sync_zeros(active)

    def _zero_fill_for(self, mark: FlushMark) -> LogSegment | None:
        """Under ``_flush_lock``, after the flush ``mark`` describes: plan the active
        segment's zero window and write its zeros (under ``_lock``); the segment whose
        zeros now need an fsync, or None when there are none to write."""
        if self._config.flush_policy is not FlushPolicy.PER_APPEND:
            return None  # no acknowledgement waits for these fsyncs: nothing to gain
        with self._lock:
            if self._closed:
                return None
            active = self._segments[-1]
            if active.base_offset != mark.segment_base:
                return None  # rolled since the flush: the new segment's first flush plans it
            end = self._zero_window.plan(active.size, active.allocated, self._config.segment_bytes)
            if not end:
                return None
            active.zero_fill(end)
        return active

    def _sync_zeros(self, active: LogSegment) -> None:
        """fsync the zeros just written (the .txnindex is the next flush's business); a
        failure fails the waiters as a failed flush does."""
        try:
            active.sync_data()
        except OSError as exc:
            self._fail_waiters(StorageError(f"fsync of {active.log_path} failed: {os_reason(exc)}"))

    def _snapshot_due(self, active: LogSegment) -> bool:
        """Under ``_lock``: the active segment grew by the snapshot interval since the
        last producer snapshot."""
        base, position = self._snapshot_at
        since = active.size - (position if base == active.base_offset else 0)
        return since >= self.snapshot_interval_bytes

    def _periodic_snapshot_data(self, active: LogSegment, target: int) -> bytes | None:
        """Under ``_lock``: the producer state as of ``target`` (every batch below it is
        in it) when the active segment grew by :data:`PRODUCER_SNAPSHOT_INTERVAL_BYTES`
        since the last snapshot, else None."""
        if not self._snapshot_due(active):
            return None
        self._snapshot_at = (active.base_offset, active.size)
        return self.producers.snapshot_data()

    def _write_snapshot_tail(self, offset: int, data: bytes, truncations: int) -> None:
        """On a helper, after the ring's fsync covering every batch below ``offset``:
        write the periodic producer snapshot taken with that flush, unless the log was
        closed or truncated since (its state would no longer match the log)."""
        with self._flush_lock:
            with self._lock:
                if self._closed or self._truncations != truncations:
                    return
            self._write_periodic_snapshot(offset, data)

    def _write_periodic_snapshot(self, offset: int, data: bytes) -> None:
        """After the fsync covering every batch below ``offset``: its producer snapshot
        (recovery replays from the newest one at or below the log end), replacing the
        previous periodic one; the roll snapshots stay.  A failure is logged: the
        snapshot only shortens recovery."""
        try:
            self.producers.write_snapshot(offset, data)
        except OSError as exc:
            _logger.warning("cannot write the producer snapshot of %s: %s", self.directory, exc)
            return
        previous, self._periodic_snapshot = self._periodic_snapshot, offset
        if 0 <= previous < offset:
            self.producers.snapshot_path(previous).unlink(missing_ok=True)

    def _sync_rolled(self, seg: LogSegment, snapshot: bytes) -> None:
        """fsync a segment sealed by a roll, then write its producer snapshot.  Called
        under ``_flush_lock`` (which anything that closes or retires a segment takes).
        A zero window after its end is cut first, so the fsync makes the file's length
        its logical end before the recovery point may pass it."""
        if seg.trim_zeros():
            self._zero_window.release()  # the next flush registers the new segment's
        seg.fsync()
        self.producers.write_snapshot(seg.next_offset, snapshot)

    def _write_flush_mark(self, mark: FlushMark) -> None:
        """Record the fsynced position for recovery (see :mod:`~riverbed.storage.flush_mark`);
        a failure only weakens corruption detection, so it is logged, not raised."""
        try:
            self._flush_mark.write(mark)
        except OSError as exc:
            _logger.warning("cannot write the flushed position of %s: %s", self.directory, exc)

    def flush_due(self, monotonic_ms: int) -> int | None:
        """For the flusher: 0 when an interval flush is due, else ms to wait, or None."""
        config = self._config
        if config.flush_policy is not FlushPolicy.INTERVAL:
            return None
        first = self._first_unflushed_mono_ms
        if first < 0:
            return min(config.flush_ms, 1000)
        return max(first + config.flush_ms - monotonic_ms, 0)

    def _reset_unflushed(self) -> None:
        self._unflushed_messages = 0
        self._first_unflushed_mono_ms = -1

    def _pop_waiters(self, flushed: int) -> list[Future[None]]:
        ready = []
        while self._waiters and self._waiters[0][0] < flushed:
            ready.append(heapq.heappop(self._waiters)[2])
        return ready

    def _resolve_waiters(self, flushed: int) -> None:
        for fut in self._pop_waiters(flushed):
            _settle(fut)

    def _fail_waiters(self, exc: BaseException) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
            self._flushing_to = -1
        for _o, _s, fut in waiters:
            _settle(fut, exc)

    def checkpoint(self) -> None:
        """Persist recovery point, log start and cleaner offsets if they changed.

        The write (two fsyncs) holds ``_checkpoint_lock`` only, so appends, reads and
        flushes go on meanwhile (a flush that met a held ``_flush_lock`` would leave the
        io_uring for a helper thread).  Everything else that writes the checkpoint or
        changes its offsets holds ``_checkpoint_lock`` too, so writes never interleave
        and an older checkpoint never replaces a newer one.  The one change it does not
        exclude is a flush raising ``flushed_offset``: a checkpoint taken just before
        records a lower recovery point, which only makes recovery scan more.
        """
        with self._checkpoint_lock:
            with self._lock:
                cp = PartitionCheckpoint(
                    self._flushed_offset, self._log_start_offset, self._cleaner_offset
                )
                if cp == self._checkpointed or self._closed:
                    return
            write_checkpoint(self.directory, cp)
            self._checkpointed = cp

    # -- read -------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool = True,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> FetchResult:
        """Whole batches from the one containing ``offset`` (it may start below ``offset``),
        up to ``max_bytes`` (at least one batch with ``min_one_batch``), from one segment.

        READ_COMMITTED returns nothing at or above the LSO (an ``offset`` in
        ``[LSO, log end]`` reads empty) and the aborted transactions overlapping
        ``[offset, end of the returned batches)`` in ``aborted_transactions``.

        Every batch returned was verified (CRC-32C, header sanity) since this process
        opened its segment; one that fails raises CorruptSegmentError (KAFKA_STORAGE_ERROR)
        naming the file and byte, and is never served (:meth:`LogSegment.verify_through`).
        """
        with self._lock:
            self._check_open()
            end = self._segments[-1].next_offset
            start = self._log_start_offset
            if offset < start or offset > end:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is outside [{start}, {end}] of {self.directory.name}"
                )
            lso = self._lso_locked()
            committed = isolation is IsolationLevel.READ_COMMITTED
            data = b""
            i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
            for seg in self._segments[i:] if not committed or offset < lso else ():
                found = seg.locate_verified(offset)
                if found is not None:
                    data = seg.read_verified(found[0], max_bytes, min_one_batch=min_one_batch)
                    break
            if not committed:
                return FetchResult(data, end, start, end, lso)
            if lso < end:  # else every batch read is below the LSO: nothing to cut
                data = bound_batches(data, lso)
            aborted: tuple[AbortedTxn, ...] = ()
            # segments before i end at or below ``offset``: only i on may hold an entry
            # overlapping the read; none (no abort there, the common case) skips the
            # header walk and the index search
            if data and any(seg.txn_index.entries for seg in self._segments[i:]):
                upper = min(self._last_next_offset(data), lso)
                aborted = tuple(collect_aborted_transactions(self._segments, offset, upper))
            return FetchResult(data, end, start, end, lso, aborted)

    @staticmethod
    def _last_next_offset(data: bytes) -> int:
        """One past the last offset of the whole batches in ``data``."""
        return max(h.next_offset for _p, h in iter_batches(data))

    def scrub_step(self, max_bytes: int) -> int:
        """Verify up to ``max_bytes`` more of the first segment not yet verified (the
        background scrubber, :mod:`riverbed.storage.scrub`).  Returns a positive number
        while there is work left (the bytes verified, at least 1), 0 once every segment
        is verified or known to be corrupt.  A corrupt batch is logged at ERROR by the
        verifier and never served; nothing is changed on disk."""
        with self._lock:
            if self._closed:
                return 0
            for seg in self._segments:
                before = seg.verified_to
                if before >= seg.size or seg.verifier.corruption is not None:
                    continue
                # a corrupt batch is recorded by the verifier: the next step skips it
                with contextlib.suppress(CorruptSegmentError):
                    seg.verify_through(before + max_bytes)
                return max(seg.verified_to - before, 1)
            return 0

    def offset_for_timestamp(
        self,
        ts_ms: int,
        *,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``ts_ms``.

        Special values as in ListOffsets: -2 earliest, -1 latest (timestamp -1): under
        READ_COMMITTED latest is the LSO and a timestamp lookup that lands at or above
        the LSO finds nothing (Kafka's ``lastFetchableOffset``).
        """
        from riverbed.storage.timestamps import find_offset_for_timestamp

        with self._lock:
            self._check_open()
            committed = isolation is IsolationLevel.READ_COMMITTED
            if ts_ms == -2:
                return self._log_start_offset, -1
            if ts_ms == -1:
                return (self._lso_locked() if committed else self._segments[-1].next_offset), -1
            found = find_offset_for_timestamp(self._segments, ts_ms, self._log_start_offset)
            if committed and found is not None and found[0] >= self._lso_locked():
                return None
            return found

    # -- truncation, retention, deletion ----------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: advance the log start offset to ``offset`` (persisted before
        returning) and delete segments wholly below it; returns the new log start."""
        with self._checkpoint_lock, self._flush_lock, self._lock:
            self._check_open()
            end = self._segments[-1].next_offset
            if offset < 0 or offset > end:
                raise OffsetOutOfRangeError(f"cannot delete records before {offset}; end {end}")
            if offset > self._log_start_offset:
                self._log_start_offset = offset
                self._cleaner_offset = max(self._cleaner_offset, offset)
                self._delete_segments_below_start()
                self._write_checkpoint_locked()
            return self._log_start_offset

    def _write_checkpoint_locked(self) -> None:
        cp = PartitionCheckpoint(self._flushed_offset, self._log_start_offset, self._cleaner_offset)
        write_checkpoint(self.directory, cp)
        self._checkpointed = cp

    def _delete_segments_below_start(self) -> int:
        """Delete non-active segments all of whose offsets are below the log start."""
        n = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start_offset:
            self._retire(self._segments.pop(0))
            self._bases.pop(0)
            n += 1
        if n:
            self.producers.delete_snapshots_below(self._log_start_offset)
        return n

    def _retire(self, seg: LogSegment) -> None:
        self._rolled = [r for r in self._rolled if r[0] is not seg]
        now = self._clock.now_ms()
        self._deletions.retire(seg, now + self._config.file_delete_delay_ms, now)

    def delete_expired_files(self) -> int:
        """Remove retired segments whose ``file.delete.delay.ms`` has passed; returns how
        many (the LogManager's maintenance thread calls this)."""
        with self._lock:
            if self._closed:  # being deleted or closed: the files go with the directory
                return 0
            return self._deletions.delete_due(self._clock.now_ms())

    @property
    def pending_deletions(self) -> int:
        with self._lock:
            return len(self._deletions)

    def remove_expired_producers(self) -> int:
        """Drop producers idle past ``producer.id.expiration.ms``; returns how many."""
        with self._lock:
            return self.producers.remove_expired(self._clock.now_ms())

    def enforce_retention(self) -> int:
        """Delete whole segments over retention.ms / retention.bytes (cleanup.policy
        delete); returns how many were deleted.  Rolls an expired active segment first."""
        deleted = 0
        with self._checkpoint_lock, self._flush_lock, self._lock:
            if self._closed or not self._config.delete:
                return 0
            now_ms = self._clock.now_ms()
            if retention.active_segment_expired(self._segments, self._config, now_ms):
                self._roll_locked(now_ms)
            count = retention.deletable_segments(self._segments, self._config, now_ms)
            if count:
                self._log_start_offset = max(
                    self._log_start_offset, self._segments[count].base_offset
                )
                self._cleaner_offset = max(self._cleaner_offset, self._log_start_offset)
                deleted = self._delete_segments_below_start()
                self._write_checkpoint_locked()
            owed = bool(self._rolled)
        if owed:
            self._request_flush()
        return deleted

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= ``offset`` (tests, recovery)."""
        with self._checkpoint_lock, self._flush_lock, self._lock:
            self._check_open()
            if offset >= self._segments[-1].next_offset:
                return
            # Lower the durable claims (flushed mark, recovery point) before cutting, so a
            # crash in between never reads as lost acknowledged data.
            self._flush_mark.reset()
            self._truncations += 1
            floor = max([b for b in self._bases if b < offset] or [max(offset, 0)])
            self._flushed_offset = min(self._flushed_offset, floor)
            self._write_checkpoint_locked()
            if offset <= self._segments[0].base_offset:
                for seg in self._segments:
                    self._retire(seg)
                base = max(offset, 0)
                self._segments = [
                    LogSegment.open(
                        self.directory,
                        base,
                        index_interval_bytes=self._config.index_interval_bytes,
                        created_ms=self._clock.now_ms(),
                    )
                ]
                self._log_start_offset = base
            else:
                while self._segments[-1].base_offset >= offset:
                    self._retire(self._segments.pop())
                self._segments[-1].truncate_to(offset)
                self._segments[-1].fsync()
            self._bases = [s.base_offset for s in self._segments]
            self._rolled = [r for r in self._rolled if r[0] is not self._segments[-1]]
            end = self._segments[-1].next_offset
            self._log_start_offset = min(self._log_start_offset, end)
            self._cleaner_offset = min(self._cleaner_offset, end)
            self._flushed_offset = min(self._flushed_offset, end)
            self.producers.truncate_snapshots(end)
            self._rebuild_producer_state()
            fsync_dir(self.directory)
            self._write_checkpoint_locked()
            stale = [w for w in self._waiters if w[0] >= end]
            self._waiters = [w for w in self._waiters if w[0] < end]
            heapq.heapify(self._waiters)
        for o, _s, fut in stale:
            _settle(fut, OffsetOutOfRangeError(f"offset {o} was truncated"))

    # -- compaction hooks (riverbed.storage.cleaner) -----------------------------------

    @property
    def cleaner_offset(self) -> int:
        return self._cleaner_offset

    def replace_segment(self, old: LogSegment, expected_size: int, cleaned: Path) -> bool:
        """Commit a compacted copy of ``old`` (same base offset) from its ``.cleaned`` file."""
        return self.replace_segments([old], [expected_size], cleaned)

    def replace_segments(
        self,
        old: Sequence[LogSegment],
        expected_sizes: Sequence[int],
        cleaned: Path,
        removed_markers: Collection[int] = (),
    ) -> bool:
        """Commit ``cleaned`` as the one segment replacing the consecutive sealed
        segments ``old`` (it starts at ``old[0]``'s base offset and ends where they end).

        Under the log's locks: write the old segments' aborted transactions to
        ``<base>.txnindex.swap``, rename ``.cleaned`` to ``.log.swap`` and fsync the
        directory (the commit point recovery honours), retire the old segments
        (``.deleted``), rename the swaps to ``.txnindex`` and ``.log`` and rebuild the
        indexes.  The entries of ABORT markers at ``removed_markers`` (offsets the
        cleaner dropped) are left out.  Returns False (and deletes ``cleaned``) if any
        of ``old`` changed or left the log meanwhile.
        """
        with self._flush_lock, self._lock:
            i = self._segments.index(old[0]) if old[0] in self._segments else -1
            if (
                self._closed
                or i < 0
                or i + len(old) >= len(self._segments)
                or self._segments[i : i + len(old)] != list(old)
                or [s.size for s in old] != list(expected_sizes)
            ):
                cleaned.unlink(missing_ok=True)
                return False
            first = old[0]
            target = self.directory / (segment_name(first.base_offset) + LOG_SUFFIX)
            swap = target.with_name(target.name + SWAP_SUFFIX)
            aborted = [
                e
                for seg in old
                for e in seg.txn_index.entries
                if e.last_offset not in removed_markers
            ]
            txn_target = self.directory / (segment_name(first.base_offset) + TXN_INDEX_SUFFIX)
            txn_swap = txn_target.with_name(txn_target.name + SWAP_SUFFIX)
            if aborted:
                write_atomically(txn_swap, encode_entries(aborted))
            # the group's end, for recovery: the cleaned segment may end before it
            swap_end = self.directory / (segment_name(first.base_offset) + SWAP_END_SUFFIX)
            write_atomically(swap_end, f"{old[-1].next_offset}\n".encode())
            faults.point("file.rename", cleaned)
            os.replace(cleaned, swap)
            fsync_dir(self.directory)
            for seg in old:
                self._retire(seg)
            if aborted:
                os.replace(txn_swap, txn_target)
            faults.point("file.rename", swap)
            os.replace(swap, target)
            swap_end.unlink(missing_ok=True)
            seg = LogSegment.open(
                self.directory,
                first.base_offset,
                index_interval_bytes=self._config.index_interval_bytes,
                created_ms=first.created_ms,
            )
            seg.rebuild(sealed=True)
            seg.seal()
            self._segments[i : i + len(old)] = [seg]
            self._bases = [s.base_offset for s in self._segments]
            fsync_dir(self.directory)
            return True

    def set_cleaner_offset(self, offset: int) -> None:
        with self._checkpoint_lock, self._flush_lock, self._lock:
            self._cleaner_offset = max(self._cleaner_offset, offset)
            self._write_checkpoint_locked()

    # -- close ------------------------------------------------------------------------

    def close(self) -> None:
        """Clean shutdown: fsync, producer snapshot, checkpoint, clean-shutdown marker.

        If a step fails (a full disk), the pending flush waiters are failed with a
        StorageError naming the partition and the error propagates; the log stays open
        (no marker written, so the next start recovers it) and the caller may retry
        or release its descriptors with :meth:`close_unclean`.
        """
        try:
            self._close_cleanly()
        except Exception as exc:
            reason = os_reason(exc) if isinstance(exc, OSError) else exc
            self._fail_waiters(StorageError(f"closing {self.directory} failed: {reason}"))
            raise

    def _close_cleanly(self) -> None:
        if self._flusher is not None:
            self._flusher.unregister(self)
        with self._checkpoint_lock, self._flush_lock, self._lock:
            if self._closed:
                return
            for seg, snapshot in self._rolled:
                self._sync_rolled(seg, snapshot)
            self._rolled = []
            active = self._segments[-1]
            active.flush_indexes()
            active.trim_zeros()  # file size == logical end before the clean marker
            self._zero_window.release()
            active.fsync()
            end = active.next_offset
            self._flushed_offset = end
            self.producers.write_snapshot(end)
            self._write_checkpoint_locked()
            for seg in self._segments:
                seg.flush_indexes()
                seg.close()
            self._flush_mark.close()
            self._deletions.delete_all()
            mark_clean_shutdown(self.directory)
            self._closed = True
            ready = self._pop_waiters(end)
            stale, self._waiters = self._waiters, []
        for fut in ready:
            _settle(fut)
        for _o, _s, fut in stale:
            _settle(
                fut,
                LogClosedError(
                    f"log {self.directory} was closed before an fsync reached offset {_o}"
                ),
            )

    def close_unclean(self) -> None:
        """Close the files without any of the clean-shutdown steps (tests: simulate a crash).

        Pending flush waiters are left as they are, as a crash would leave them."""
        if self._flusher is not None:
            self._flusher.unregister(self)
        with self._checkpoint_lock, self._flush_lock, self._lock:
            self._release_files()

    def begin_deletion(self) -> None:
        """Refuse every further write, read and checkpoint (LogDeletedError, which answers
        UNKNOWN_TOPIC_OR_PARTITION as Kafka does for a partition it no longer hosts -- a
        fetch that found the log on the event loop just before the deletion may read it
        on a worker thread after -- or a silent no-op for the background checkpoint and
        flush) without touching a file: the first step of a deletion, taken before the
        directory is renamed, so the flusher thread never writes ``partition.checkpoint``
        or ``flushed.mark`` under a path that has moved.  Waits for an fsync or
        checkpoint in progress (both locks).
        :meth:`close_for_deletion` then releases the files and answers the waiters."""
        with self._checkpoint_lock, self._flush_lock, self._lock:
            self._deleted = True
            self._closed = True

    def close_for_deletion(self) -> None:
        """Release the log because its directory is being deleted (DeleteTopics).

        Closes every file handle (segments, retired segments) and fails each pending
        flush waiter with LogDeletedError (UNKNOWN_TOPIC_OR_PARTITION, retriable, as
        Kafka answers a produce waiting on a partition it stopped hosting), skipping
        waiters that cancelled, so no produce waiting on this log goes unanswered.
        Writes nothing into the directory: no fsync, no index flush, no producer
        snapshot, no checkpoint, no flushed mark, no clean-shutdown marker (the
        directory has usually been renamed already; any write would be wasted, fail,
        or land in a re-created partition of the same name).  Idempotent; never does
        disk I/O beyond closing descriptors.  Safe from any thread.
        """
        if self._flusher is not None:
            self._flusher.unregister(self)
        stale: list[tuple[int, int, Future[None]]] = []
        end = 0
        try:
            with self._checkpoint_lock, self._flush_lock, self._lock:
                self._deleted = True
                end = self._segments[-1].next_offset
                stale, self._waiters = self._waiters, []
                self._rolled = []
                self._release_files()
        finally:  # even if a descriptor failed to close, nobody waits in vain
            exc = LogDeletedError(
                f"{self.directory.name} was deleted before the fsync "
                f"covering its offsets below {end} completed"
            )
            for _o, _s, fut in stale:
                _settle(fut, exc)

    def _release_files(self) -> None:
        """Mark the log closed and close every descriptor, all of them even if one
        fails (the first error is raised after); under both locks, no writes."""
        self._closed = True
        self._zero_window.release()  # a crash or a deletion: its zeros count no more
        self._flush_mark.close()
        errors: list[OSError] = []
        for seg in self._segments:
            try:
                seg.close()
            except OSError as exc:
                errors.append(exc)
        self._deletions.close_all()
        if errors:
            raise errors[0]

    def __repr__(self) -> str:
        return f"PartitionLog({self.directory.name})"
