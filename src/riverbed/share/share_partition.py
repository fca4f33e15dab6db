"""The state of one share partition (KIP-932): which offsets are in flight, locked by whom.

A share group reads a topic partition as a queue: each record is *acquired* by one member
for a lock duration and then acknowledged one by one.  Kafka's ``SharePartition`` keeps,
for the offsets between the share-partition start offset (SPSO) and the end of what was
ever fetched (SPEO), a state per offset; so does :class:`SharePartition`::

                      acquire (delivery_count += 1)
        AVAILABLE ─────────────────────────────────────▶ ACQUIRED ──ACCEPT──▶ ACKNOWLEDGED
            ▲  ▲                                          │  │  │ ▲
            │  │ RELEASE / lock timeout                   │  │  │ └─RENEW (lock extended)
            │  └──────── (delivery_count < limit) ────────┤  │  │
            │                                             │  │  └──REJECT / GAP──▶ ARCHIVED
            └─ member left / session closed ──────────────┘  │
               (delivery_count -= 1, never archived)         │
            RELEASE / lock timeout                           │
            (delivery_count >= limit) ───────────────────────┴────────────────────▶ ARCHIVED

ACKNOWLEDGED and ARCHIVED are final.  The SPSO moves past the contiguous prefix of final
offsets; offsets below it are forgotten.  Offsets between log batches (aborted or control
records, compacted gaps) that an acquisition skips over are ARCHIVED at once (delivery
count 0) so they never block the SPSO.

Representation: a sorted list of ranges of equal state, covering ``[start_offset,
end_offset)`` without holes, and a heap of lock deadlines.  A change splits at most two
ranges and re-merges neighbours, so the list stays as short as the number of distinct
runs; locating an offset is a binary search (O(log n) plus a memmove of the list, n <=
``max_in_flight_records``).  Counters per state make ``next_fetch_offset``, ``lag`` and
the in-flight figures O(1) in the common case.

Persistence (see :mod:`riverbed.share.share_state_records`): every call that changes
state returns ``records``, the ``__share_group_state`` records that describe the change
(a ShareUpdate, or every ``snapshot_update_records`` changes a full ShareSnapshot).  The
caller appends them to ``__share_group_state`` **in the order they are returned**, with
acks=all semantics:

* ``acknowledge`` / ``release_member`` / ``expire_locks`` / ``reset_start_offset`` /
  ``advance_start_offset``: the response to the client (or the next step) waits until the
  records are durable, as Kafka answers ShareAcknowledge after the share coordinator's
  write.  An ACCEPT is never reported as done before it is on disk.
* ``acquire``: the records carry the new delivery counts.  They may be appended without
  delaying the ShareFetch response; if the broker crashes before they are durable, the
  offsets come back AVAILABLE with the previous count (one delivery under-counted, as in
  Kafka, which never persists acquisitions).

The records of one share partition go to one ``__share_group_state`` partition
(:func:`~riverbed.share.share_state_records.state_partition_for`, Kafka's placement), a
topic with ``cleanup.policy=delete``, never compacted (ShareUpdates share one key; see
:mod:`riverbed.share.share_state_log` for pruning instead).

Crash behaviour: a lock is never persisted.  After a restart, :meth:`SharePartition.restore`
rebuilds the state from the replayed records; offsets that were ACQUIRED come back
AVAILABLE with the delivery count they were acquired with (those that reached the limit
come back ARCHIVED); ACKNOWLEDGED and ARCHIVED offsets stay final.

Thread-safety: none.  Every method runs on the broker's event loop thread; none does I/O
or blocks.  Errors: invalid arguments raise :class:`ValueError` subclasses only for
programming mistakes; client mistakes are answered as wire error codes in the result.
"""

from __future__ import annotations

import heapq
import uuid
from bisect import bisect_right
from collections.abc import Callable, Sequence

from riverbed.protocol.error_codes import ErrorCode
from riverbed.share.share_state_log import PersistedShareState
from riverbed.share.share_state_records import (
    NO_START_OFFSET_CHANGE,
    DeliveryState,
    SharePartitionKey,
    ShareStateRecord,
    StateBatch,
)
from riverbed.share.share_values import (
    AcknowledgeResult,
    AcknowledgeType,
    AcquiredRecords,
    AcquireResult,
    ArchivedRecords,
    ArchiveReason,
    RecordState,
    SharePartitionConfig,
    ShareStateChange,
    initial_start_offset,
)

__all__ = [  # the values are re-exported: callers import them from here too
    "AcknowledgeResult",
    "AcknowledgeType",
    "AcquireResult",
    "AcquiredRecords",
    "ArchiveReason",
    "ArchivedRecords",
    "RecordState",
    "SharePartition",
    "SharePartitionConfig",
    "ShareStateChange",
    "initial_start_offset",
]


class _Range:
    """Offsets ``first..last`` (inclusive) in one state; lock fields only when ACQUIRED."""

    __slots__ = ("deadline_ms", "delivery_count", "first", "last", "lock_id", "member_id", "state")

    def __init__(
        self,
        first: int,
        last: int,
        state: RecordState,
        delivery_count: int,
        member_id: str | None = None,
        deadline_ms: int = 0,
        lock_id: int = 0,
    ) -> None:
        self.first = first
        self.last = last
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline_ms = deadline_ms
        self.lock_id = lock_id

    def same_as(self, other: _Range) -> bool:
        return (
            self.state == other.state
            and self.delivery_count == other.delivery_count
            and self.lock_id == other.lock_id
            and self.member_id == other.member_id
            and self.deadline_ms == other.deadline_ms
        )

    def copy_from(self, first: int) -> _Range:
        return _Range(
            first,
            self.last,
            self.state,
            self.delivery_count,
            self.member_id,
            self.deadline_ms,
            self.lock_id,
        )

    @property
    def size(self) -> int:
        return self.last - self.first + 1


_PERSISTED = {
    RecordState.AVAILABLE: DeliveryState.AVAILABLE,
    RecordState.ACQUIRED: DeliveryState.AVAILABLE,
    RecordState.ACKNOWLEDGED: DeliveryState.ACKNOWLEDGED,
    RecordState.ARCHIVED: DeliveryState.ARCHIVED,
}
_FROM_PERSISTED = {
    DeliveryState.AVAILABLE: RecordState.AVAILABLE,
    DeliveryState.ACKNOWLEDGED: RecordState.ACKNOWLEDGED,
    DeliveryState.ARCHIVED: RecordState.ARCHIVED,
}


class SharePartition:
    """In-flight state of one share group on one topic partition.  See the module docstring.

    ``start_offset`` is the SPSO: every offset below it is done (or was skipped by a
    reset).  ``end_offset`` is one past the last offset ever acquired (SPEO + 1), like a
    log end offset; offsets at or beyond it were never delivered.
    """

    def __init__(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        config: SharePartitionConfig,
        *,
        start_offset: int,
        state_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> None:
        if start_offset < 0:
            raise ValueError(f"start_offset {start_offset} < 0")
        self.key = SharePartitionKey(group_id, topic_id, partition)
        self.config = config
        self._start = start_offset
        self._end = start_offset
        self._firsts: list[int] = []
        self._ranges: list[_Range] = []
        self._counts = [0, 0, 0, 0, 0]  # offsets in window per RecordState value
        self._locks: list[tuple[int, int, int, int]] = []  # (deadline, lock_id, first, last)
        self._lock_refs: dict[int, int] = {}  # lock_id -> offsets it still locks
        self._next_lock_id = 1
        self._state_epoch = state_epoch
        self._leader_epoch = leader_epoch
        self._snapshot_epoch = -1  # no snapshot written yet: the first change writes one
        self._updates_since_snapshot = 0
        self._create_timestamp_ms = -1
        self._last_snapshot_ms = -1

    # ------------------------------------------------------------------ accessors

    @property
    def group_id(self) -> str:
        return self.key.group_id

    @property
    def topic_id(self) -> uuid.UUID:
        return self.key.topic_id

    @property
    def partition(self) -> int:
        return self.key.partition

    @property
    def start_offset(self) -> int:
        """SPSO: the lowest offset that is not yet final."""
        return self._start

    @property
    def end_offset(self) -> int:
        """One past the last offset ever acquired (SPEO + 1)."""
        return self._end

    @property
    def state_epoch(self) -> int:
        """Bumped by :meth:`reset_start_offset` (Kafka's share-partition state epoch)."""
        return self._state_epoch

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    @property
    def snapshot_epoch(self) -> int:
        """Epoch of the last snapshot written (-1: none yet)."""
        return self._snapshot_epoch

    @property
    def last_snapshot_ms(self) -> int:
        """When this process last wrote a snapshot of it (-1: never, e.g. just restored).

        Kafka re-snapshots *cold* share partitions every
        ``share.coordinator.cold.partition.snapshot.interval.ms`` (5 min), so that the
        redundant prefix of ``__share_group_state`` keeps moving (pruning) and retention
        never removes the only snapshot of a quiet partition: call :meth:`snapshot` when
        ``now_ms - last_snapshot_ms`` exceeds that interval and append the record.
        """
        return self._last_snapshot_ms

    @property
    def in_flight_records(self) -> int:
        """Offsets in ``[start_offset, end_offset)``: what counts against the lock limit."""
        return self._end - self._start

    @property
    def acquired_records(self) -> int:
        """Offsets locked by some member right now."""
        return self._counts[RecordState.ACQUIRED]

    @property
    def available_records(self) -> int:
        """Offsets below ``end_offset`` waiting to be delivered again."""
        return self._counts[RecordState.AVAILABLE]

    @property
    def delivery_complete_count(self) -> int:
        """KIP-1226: final (ACKNOWLEDGED or ARCHIVED) offsets at or above the SPSO."""
        return self._counts[RecordState.ACKNOWLEDGED] + self._counts[RecordState.ARCHIVED]

    def lag(self, high_watermark: int) -> int:
        """Records not yet done (KIP-1226): ``HWM - SPSO - delivery_complete_count``."""
        return max(0, high_watermark - self._start - self.delivery_complete_count)

    def next_fetch_offset(self) -> int:
        """Where the caller should read the log from for the next :meth:`acquire`: the
        first AVAILABLE offset in flight, else ``end_offset``.  O(1) when nothing was
        released; otherwise a scan of the ranges."""
        if self._counts[RecordState.AVAILABLE]:
            for r in self._ranges:
                if r.state is RecordState.AVAILABLE:
                    return r.first
        return self._end

    def has_acquirable(self, high_watermark: int) -> bool:
        """Whether an :meth:`acquire` could lock anything now: an offset is AVAILABLE
        again, or the log has offsets beyond ``end_offset`` within the in-flight limit.
        False means a ShareFetch should wait (for new records, a release, a lock timeout
        or the start offset moving up).  True may still acquire nothing when only
        non-deliverable offsets (control or aborted records) lie below the watermark.
        O(1)."""
        if self._counts[RecordState.AVAILABLE]:
            return True
        return self._end < high_watermark and (
            self._end < self._start + self.config.max_in_flight_records
        )

    def next_lock_deadline_ms(self) -> int | None:
        """The deadline of the next lock to time out (None: nothing locked); call
        :meth:`expire_locks` then.  Exact: locks whose offsets were all acknowledged,
        released or renewed are dropped first (amortised O(log n))."""
        self._drop_stale_locks()
        return self._locks[0][0] if self._locks else None

    def state_of(self, offset: int) -> tuple[RecordState, int, str | None] | None:
        """``(state, delivery_count, member holding the lock)`` of an in-flight offset, or
        None outside ``[start_offset, end_offset)``.  For tests and Describe."""
        if not self._start <= offset < self._end:
            return None
        r = self._ranges[self._index(offset)]
        return r.state, r.delivery_count, r.member_id

    def in_flight(self) -> tuple[tuple[int, int, RecordState, int, str | None], ...]:
        """Every range ``(first, last, state, delivery_count, member)``, sorted."""
        return tuple(
            (r.first, r.last, r.state, r.delivery_count, r.member_id) for r in self._ranges
        )

    def state_batches(self) -> tuple[StateBatch, ...]:
        """The in-flight state as it is persisted (ACQUIRED as AVAILABLE), coalesced."""
        out: list[StateBatch] = []
        for r in self._ranges:
            _append_batch(out, r.first, r.last, _PERSISTED[r.state], r.delivery_count)
        return tuple(out)

    # ------------------------------------------------------------------ changes

    def acquire(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int]],
        max_records: int,
        now_ms: int,
    ) -> AcquireResult:
        """Lock for ``member_id`` up to ``max_records`` deliverable offsets.

        ``batches``: ``(base_offset, last_offset)`` of the log batches the caller read
        starting at :meth:`next_fetch_offset`, up to the high watermark (or last stable
        offset), sorted; only batches to deliver (no control batches, no aborted ones).
        Acquired are the AVAILABLE offsets inside them below ``end_offset``, then new
        offsets from ``end_offset`` on, contiguous, while below ``start_offset +
        max_in_flight_records``.  Offsets between ``end_offset`` and a later batch are
        archived as gaps.  Each acquired offset's ``delivery_count`` grows by one and is
        locked until ``now_ms + record_lock_duration_ms``.
        """
        if max_records <= 0 or not batches:
            return AcquireResult()
        remaining = max_records
        lock_id = self._new_lock_id()
        deadline = now_ms + self.config.record_lock_duration_ms
        limit = self._start + self.config.max_in_flight_records  # first offset not allowed
        changed: list[StateBatch] = []
        acquired: list[_Range] = []
        for base, last in sorted(batches):
            if remaining <= 0:
                break
            if last < self._start or last < base:
                continue
            base = max(base, self._start)
            if base < self._end and self._counts[RecordState.AVAILABLE]:
                remaining = self._acquire_available(
                    base, min(last, self._end - 1), remaining, member_id, deadline, lock_id,
                    acquired, changed,
                )  # fmt: skip
            if last >= self._end and remaining > 0:
                first_new = max(base, self._end)
                last_new = min(last, first_new + remaining - 1, limit - 1)
                if last_new < first_new:
                    break  # the in-flight limit is reached
                if first_new > self._end:
                    gap = _Range(self._end, first_new - 1, RecordState.ARCHIVED, 0)
                    self._append(gap)
                    _append_batch(changed, gap.first, gap.last, DeliveryState.ARCHIVED, 0)
                r = _Range(
                    first_new, last_new, RecordState.ACQUIRED, 1, member_id, deadline, lock_id
                )
                self._append(r)
                acquired.append(r)
                _append_batch(changed, first_new, last_new, DeliveryState.AVAILABLE, 1)
                remaining -= r.size
        if not acquired and not changed:
            return AcquireResult()
        if acquired:
            heapq.heappush(self._locks, (deadline, lock_id, acquired[0].first, acquired[-1].last))
        out: list[AcquiredRecords] = []
        for r in acquired:  # snapshot the values before neighbours merge
            prev = out[-1] if out else None
            if prev and prev.last_offset + 1 == r.first and prev.delivery_count == r.delivery_count:
                out[-1] = AcquiredRecords(prev.first_offset, r.last, r.delivery_count)
            else:
                out.append(AcquiredRecords(r.first, r.last, r.delivery_count))
        lo = min(acquired[0].first if acquired else self._end, changed[0].first_offset)
        self._coalesce(lo, self._end - 1)
        moved = self._trim()
        return AcquireResult(tuple(out), self._records(changed, moved, now_ms))

    def acknowledge(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int, Sequence[int]]],
        now_ms: int,
    ) -> AcknowledgeResult:
        """Apply one partition's ``AcknowledgementBatches`` for ``member_id``, all or none.

        Each batch is ``(first_offset, last_offset, acknowledge_types)``, with one type
        for the whole range or one per offset.  ACCEPT: ACKNOWLEDGED; REJECT and GAP:
        ARCHIVED; RELEASE: AVAILABLE again (ARCHIVED at the delivery limit); RENEW: the
        lock is extended to ``now_ms + record_lock_duration_ms`` and nothing is persisted.

        Errors (nothing applied): INVALID_REQUEST for a malformed batch (first > last,
        a wrong number of types, an unknown type, overlapping batches);
        INVALID_RECORD_STATE when an offset is not ACQUIRED by ``member_id`` (already
        acknowledged, lock timed out, another member's, never fetched).  A lock whose
        deadline has passed but that :meth:`expire_locks` has not released yet is still
        honoured (the record is then processed once rather than delivered again).
        """
        norm: list[tuple[int, int, Sequence[int]]] = []
        for first, last, types in batches:
            if first < 0 or last < first:
                return _ack_error(ErrorCode.INVALID_REQUEST, f"bad range {first}..{last}")
            if len(types) not in (1, last - first + 1):
                return _ack_error(
                    ErrorCode.INVALID_REQUEST,
                    f"{len(types)} acknowledge types for offsets {first}..{last}",
                )
            if any(not 0 <= t <= AcknowledgeType.RENEW for t in types):
                return _ack_error(ErrorCode.INVALID_REQUEST, "unknown acknowledge type")
            norm.append((first, last, types))
        norm.sort(key=lambda b: b[0])
        for i in range(1, len(norm)):
            if norm[i][0] <= norm[i - 1][1]:
                return _ack_error(ErrorCode.INVALID_REQUEST, "overlapping acknowledgement batches")
        # Contiguous batches of equal type merge into one run (clients often send one
        # batch per record), and validation walks each contiguous span once.
        runs: list[list[int]] = []  # [first, last, type]
        for first, last, types in norm:
            for a, b, t in _runs(first, last, types):
                if runs and runs[-1][1] + 1 == a and runs[-1][2] == t:
                    runs[-1][1] = b
                else:
                    runs.append([a, b, t])
        spans: list[list[int]] = []
        for a, b, _ in runs:
            if spans and spans[-1][1] + 1 == a:
                spans[-1][1] = b
            else:
                spans.append([a, b])
        for first, last in spans:
            bad = self._first_not_held(member_id, first, last)
            if bad is not None:
                return _ack_error(
                    ErrorCode.INVALID_RECORD_STATE,
                    f"offset {bad} is not acquired by member {member_id}",
                )
        changed: list[StateBatch] = []
        archived: list[ArchivedRecords] = []
        renew_lock = 0
        for a, b, t in runs:
            if t == AcknowledgeType.RENEW:
                if not renew_lock:
                    renew_lock = self._new_lock_id()
                self._renew(a, b, now_ms + self.config.record_lock_duration_ms, renew_lock)
            else:
                self._settle(a, b, AcknowledgeType(t), changed, archived)
        if runs:
            self._coalesce(runs[0][0], runs[-1][1])
        moved = self._trim()
        return AcknowledgeResult(
            ErrorCode.NONE, self._records(changed, moved, now_ms), tuple(archived)
        )

    def release_member(self, member_id: str, now_ms: int) -> ShareStateChange:
        """``member_id`` left, was fenced or closed its share session: its locked offsets
        become AVAILABLE again with their delivery count *decreased* by one, never
        archived, as Kafka's ``releaseAcquiredRecords`` does ("fetched but not actually
        delivered to the client": a consumer acknowledges what it processed before it
        closes).  A crashed consumer's records normally time out first (the lock is
        shorter than the session timeout) and keep their count.  O(ranges)."""
        spans = [(r.first, r.last) for r in self._ranges if r.member_id == member_id]
        return self._release_spans(spans, lambda r: r.member_id == member_id, now_ms, uncount=True)

    def expire_locks(self, now_ms: int) -> ShareStateChange:
        """Release every lock whose deadline is at or before ``now_ms`` (AVAILABLE again,
        ARCHIVED at the delivery limit).  ``released``: how many offsets."""
        expired: set[int] = set()
        spans: list[tuple[int, int]] = []
        self._drop_stale_locks()
        while self._locks and self._locks[0][0] <= now_ms:
            _, lock_id, first, last = heapq.heappop(self._locks)
            if lock_id in self._lock_refs:
                expired.add(lock_id)
                spans.append((first, last))
        if not spans:
            return ShareStateChange()
        return self._release_spans(
            spans, lambda r: r.lock_id in expired and r.deadline_ms <= now_ms, now_ms
        )

    def reset_start_offset(self, offset: int, now_ms: int) -> ShareStateChange:
        """AlterShareGroupOffsets / DeleteShareGroupOffsets: forget everything in flight,
        start at ``offset``, bump the state epoch; returns the snapshot to persist.  The
        caller makes sure the group has no members (as Kafka requires)."""
        if offset < 0:
            raise ValueError(f"offset {offset} < 0")
        self._start = self._end = offset
        self._ranges.clear()
        self._firsts.clear()
        self._locks.clear()
        self._lock_refs.clear()
        self._counts = [0, 0, 0, 0, 0]
        self._state_epoch += 1
        return ShareStateChange(records=(self.snapshot(now_ms),))

    def advance_start_offset(self, log_start_offset: int, now_ms: int) -> ShareStateChange:
        """The log's start moved past the SPSO (retention, DeleteRecords): offsets below
        ``log_start_offset`` are gone and forgotten, locked or not."""
        if log_start_offset <= self._start:
            return ShareStateChange()
        if log_start_offset >= self._end:
            self._ranges.clear()
            self._firsts.clear()
            self._lock_refs.clear()
            self._counts = [0, 0, 0, 0, 0]
            self._end = log_start_offset
        else:
            self._split(log_start_offset)
            i = self._index(log_start_offset)
            for r in self._ranges[:i]:
                if r.state is RecordState.ACQUIRED:
                    self._unref(r.lock_id, r.size)
                self._counts[r.state] -= r.size
            del self._ranges[:i]
            del self._firsts[:i]
        self._start = log_start_offset
        self._trim()
        return ShareStateChange(records=self._records([], True, now_ms))

    def snapshot(self, now_ms: int) -> ShareStateRecord:
        """A ShareSnapshot of the whole state, starting a new snapshot epoch.  Call it when
        a share partition is first created, so its start offset is durable."""
        self._snapshot_epoch += 1
        self._updates_since_snapshot = 0
        self._last_snapshot_ms = now_ms
        if self._create_timestamp_ms < 0:
            self._create_timestamp_ms = now_ms
        return ShareStateRecord(
            key=self.key,
            is_snapshot=True,
            snapshot_epoch=self._snapshot_epoch,
            leader_epoch=self._leader_epoch,
            start_offset=self._start,
            state_batches=self.state_batches(),
            state_epoch=self._state_epoch,
            delivery_complete_count=self.delivery_complete_count,
            create_timestamp_ms=self._create_timestamp_ms,
            write_timestamp_ms=now_ms,
        )

    @classmethod
    def restore(
        cls,
        persisted: PersistedShareState,
        config: SharePartitionConfig,
        now_ms: int,
        *,
        unset_start_offset: int = 0,
    ) -> tuple[SharePartition, ShareStateChange]:
        """Rebuild a share partition from replayed records (after a restart).

        A persisted start offset of -1 means "not initialised yet" (Kafka writes it so in
        its first snapshot); the share partition then starts at ``unset_start_offset``
        (pass :func:`initial_start_offset`), or at its first state batch if it has one.

        Offsets persisted AVAILABLE (including those that were ACQUIRED: locks are not
        persisted) are AVAILABLE with their delivery count, or ARCHIVED if that count
        reached ``delivery_count_limit`` (reported in the change, whose records the caller
        appends); offsets between the start and the last batch that no batch names are
        AVAILABLE with delivery count 0.  Nothing final is ever made available again.
        """
        key = persisted.key
        start = persisted.start_offset
        if start < 0:
            batches = persisted.state_batches
            start = batches[0].first_offset if batches else max(unset_start_offset, 0)
        sp = cls(
            key.group_id,
            key.topic_id,
            key.partition,
            config,
            start_offset=start,
            state_epoch=persisted.state_epoch,
            leader_epoch=persisted.leader_epoch,
        )
        sp._snapshot_epoch = persisted.snapshot_epoch
        sp._updates_since_snapshot = persisted.updates_since_snapshot
        sp._create_timestamp_ms = persisted.create_timestamp_ms
        changed: list[StateBatch] = []
        archived: list[ArchivedRecords] = []
        limit = config.delivery_count_limit
        for b in persisted.state_batches:
            if b.last_offset < sp._end:
                continue
            first = max(b.first_offset, sp._end)
            if first > sp._end:
                sp._append(_Range(sp._end, first - 1, RecordState.AVAILABLE, 0))
            state = _FROM_PERSISTED[b.delivery_state]
            if state is RecordState.AVAILABLE and b.delivery_count >= limit:
                state = RecordState.ARCHIVED
                _append_batch(
                    changed, first, b.last_offset, DeliveryState.ARCHIVED, b.delivery_count
                )
                archived.append(
                    ArchivedRecords(
                        first, b.last_offset, b.delivery_count, ArchiveReason.DELIVERY_LIMIT
                    )
                )
            sp._append(_Range(first, b.last_offset, state, b.delivery_count))
        if sp._ranges:
            sp._coalesce(sp._start, sp._end - 1)
        moved = sp._trim()
        records = sp._records(changed, moved, now_ms) if changed or moved else ()
        return sp, ShareStateChange(0, records, tuple(archived))

    # ------------------------------------------------------------------ internals

    def _new_lock_id(self) -> int:
        lock_id = self._next_lock_id
        self._next_lock_id += 1
        return lock_id

    def _unref(self, lock_id: int, size: int) -> None:
        left = self._lock_refs[lock_id] - size
        if left:
            self._lock_refs[lock_id] = left
        else:
            del self._lock_refs[lock_id]

    def _drop_stale_locks(self) -> None:
        """Pop heap heads whose lock no longer holds any offset."""
        locks, refs = self._locks, self._lock_refs
        if not refs:
            locks.clear()
            return
        while locks and locks[0][1] not in refs:
            heapq.heappop(locks)

    def _index(self, offset: int) -> int:
        """Index of the range holding ``offset`` (which must be in the window)."""
        return bisect_right(self._firsts, offset) - 1

    def _split(self, offset: int) -> None:
        """Make ``offset`` the first offset of a range (if it lies inside the window)."""
        if not self._start < offset < self._end:
            return
        i = self._index(offset)
        r = self._ranges[i]
        if r.first == offset:
            return
        tail = r.copy_from(offset)
        r.last = offset - 1
        self._ranges.insert(i + 1, tail)
        self._firsts.insert(i + 1, offset)

    def _append(self, r: _Range) -> None:
        assert r.first == self._end
        self._ranges.append(r)
        self._firsts.append(r.first)
        self._counts[r.state] += r.size
        if r.state is RecordState.ACQUIRED:
            self._lock_refs[r.lock_id] = self._lock_refs.get(r.lock_id, 0) + r.size
        self._end = r.last + 1

    def _set(self, r: _Range, state: RecordState) -> None:
        size = r.size
        if r.state is RecordState.ACQUIRED and state is not RecordState.ACQUIRED:
            self._unref(r.lock_id, size)
        self._counts[r.state] -= size
        self._counts[state] += size
        r.state = state
        if state is not RecordState.ACQUIRED:
            r.member_id = None
            r.deadline_ms = 0
            r.lock_id = 0

    def _isolate(self, first: int, last: int) -> tuple[int, int]:
        """Split so that ``first..last`` is made of whole ranges; their index span."""
        self._split(first)
        self._split(last + 1)
        return self._index(first), self._index(last) + 1

    def _acquire_available(
        self,
        lo: int,
        hi: int,
        remaining: int,
        member_id: str,
        deadline: int,
        lock_id: int,
        acquired: list[_Range],
        changed: list[StateBatch],
    ) -> int:
        i = self._index(lo)
        while remaining > 0 and i < len(self._ranges):
            r = self._ranges[i]
            if r.first > hi:
                break
            if r.state is not RecordState.AVAILABLE:
                i += 1
                continue
            a = max(r.first, lo)
            b = min(r.last, hi, a + remaining - 1)
            i, _ = self._isolate(a, b)
            r = self._ranges[i]
            self._set(r, RecordState.ACQUIRED)
            r.delivery_count += 1
            r.member_id, r.deadline_ms, r.lock_id = member_id, deadline, lock_id
            self._lock_refs[lock_id] = self._lock_refs.get(lock_id, 0) + r.size
            acquired.append(r)
            _append_batch(changed, a, b, DeliveryState.AVAILABLE, r.delivery_count)
            remaining -= r.size
            i += 1
        return remaining

    def _first_not_held(self, member_id: str, first: int, last: int) -> int | None:
        """The first offset of ``first..last`` not ACQUIRED by ``member_id``, or None."""
        if first < self._start:
            return first
        if first >= self._end:
            return first
        i = self._index(first)
        while i < len(self._ranges) and self._ranges[i].first <= last:
            r = self._ranges[i]
            if r.state is not RecordState.ACQUIRED or r.member_id != member_id:
                return max(r.first, first)
            i += 1
        return None if last < self._end else self._end

    def _settle(
        self,
        first: int,
        last: int,
        ack: AcknowledgeType,
        changed: list[StateBatch],
        archived: list[ArchivedRecords],
    ) -> None:
        i, j = self._isolate(first, last)
        limit = self.config.delivery_count_limit
        for r in self._ranges[i:j]:
            if ack is AcknowledgeType.ACCEPT:
                self._set(r, RecordState.ACKNOWLEDGED)
            elif ack is AcknowledgeType.GAP:
                self._set(r, RecordState.ARCHIVED)
            elif ack is AcknowledgeType.REJECT:
                self._set(r, RecordState.ARCHIVED)
                archived.append(
                    ArchivedRecords(r.first, r.last, r.delivery_count, ArchiveReason.REJECTED)
                )
            else:  # RELEASE
                self._release(r, limit, archived)
            _append_batch(changed, r.first, r.last, _PERSISTED[r.state], r.delivery_count)

    def _release(self, r: _Range, limit: int, archived: list[ArchivedRecords]) -> None:
        if r.delivery_count >= limit:
            self._set(r, RecordState.ARCHIVED)
            archived.append(
                ArchivedRecords(r.first, r.last, r.delivery_count, ArchiveReason.DELIVERY_LIMIT)
            )
        else:
            self._set(r, RecordState.AVAILABLE)

    def _renew(self, first: int, last: int, deadline: int, lock_id: int) -> None:
        i, j = self._isolate(first, last)
        for r in self._ranges[i:j]:
            self._unref(r.lock_id, r.size)
            self._lock_refs[lock_id] = self._lock_refs.get(lock_id, 0) + r.size
            r.deadline_ms, r.lock_id = deadline, lock_id
        heapq.heappush(self._locks, (deadline, lock_id, first, last))

    def _release_spans(
        self,
        spans: list[tuple[int, int]],
        pick: Callable[[_Range], bool],
        now_ms: int,
        *,
        uncount: bool = False,
    ) -> ShareStateChange:
        changed: list[StateBatch] = []
        archived: list[ArchivedRecords] = []
        released = 0
        limit = self.config.delivery_count_limit
        lo, hi = self._end, -1
        for first, last in spans:
            first, last = max(first, self._start), min(last, self._end - 1)
            if first > last:
                continue
            i = self._index(first)
            while i < len(self._ranges) and self._ranges[i].first <= last:
                r = self._ranges[i]
                if r.state is RecordState.ACQUIRED and pick(r):
                    if uncount:
                        r.delivery_count = max(r.delivery_count - 1, 0)
                        self._set(r, RecordState.AVAILABLE)
                    else:
                        self._release(r, limit, archived)
                    released += r.size
                    _append_batch(changed, r.first, r.last, _PERSISTED[r.state], r.delivery_count)
                    lo, hi = min(lo, r.first), max(hi, r.last)
                i += 1
        if not released:
            return ShareStateChange()
        self._coalesce(lo, hi)
        moved = self._trim()
        changed.sort(key=lambda b: b.first_offset)
        return ShareStateChange(released, self._records(changed, moved, now_ms), tuple(archived))

    def _coalesce(self, lo: int, hi: int) -> None:
        """Merge equal neighbours among the ranges touching ``lo - 1 .. hi + 1``."""
        if not self._ranges:
            return
        i = max(self._index(max(lo, self._start)) - 1, 0)
        j = min(self._index(min(max(hi, self._start), self._end - 1)) + 1, len(self._ranges) - 1)
        k = i + 1
        while k <= j:
            prev, r = self._ranges[k - 1], self._ranges[k]
            if prev.same_as(r):
                prev.last = r.last
                del self._ranges[k]
                del self._firsts[k]
                j -= 1
            else:
                k += 1

    def _trim(self) -> bool:
        """Advance the SPSO past final offsets at the front; whether it moved."""
        n = 0
        for r in self._ranges:
            if not r.state.is_final:
                break
            self._counts[r.state] -= r.size
            n += 1
        if not n:
            return False
        self._start = self._ranges[n - 1].last + 1
        del self._ranges[:n]
        del self._firsts[:n]
        return True

    def _records(
        self, changed: list[StateBatch], start_moved: bool, now_ms: int
    ) -> tuple[ShareStateRecord, ...]:
        if not changed and not start_moved:
            return ()
        due = self.config.snapshot_update_records
        if self._snapshot_epoch < 0 or self._updates_since_snapshot >= due:
            return (self.snapshot(now_ms),)
        self._updates_since_snapshot += 1
        return (
            ShareStateRecord(
                key=self.key,
                is_snapshot=False,
                snapshot_epoch=self._snapshot_epoch,
                leader_epoch=self._leader_epoch,
                start_offset=self._start if start_moved else NO_START_OFFSET_CHANGE,
                state_batches=tuple(b for b in changed if b.last_offset >= self._start),
                delivery_complete_count=self.delivery_complete_count,
            ),
        )


def _append_batch(
    out: list[StateBatch], first: int, last: int, state: DeliveryState, count: int
) -> None:
    prev = out[-1] if out else None
    if (
        prev is not None
        and prev.last_offset + 1 == first
        and prev.delivery_state == state
        and prev.delivery_count == count
    ):
        out[-1] = StateBatch(prev.first_offset, last, state, count)
    else:
        out.append(StateBatch(first, last, state, count))


def _runs(first: int, last: int, types: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(a, b, type)`` runs of equal acknowledge types over ``first..last``."""
    if len(types) == 1:
        return [(first, last, types[0])]
    runs: list[tuple[int, int, int]] = []
    for k, t in enumerate(types):
        off = first + k
        if runs and runs[-1][2] == t:
            runs[-1] = (runs[-1][0], off, t)
        else:
            runs.append((off, off, t))
    return runs


def _ack_error(code: ErrorCode, message: str) -> AcknowledgeResult:
    return AcknowledgeResult(error_code=code, error_message=message)
