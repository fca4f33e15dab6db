"""Replay ``__share_group_state`` records into the persisted state of each share partition.

After a restart the broker reads the ``__share_group_state`` partitions from their log
start and feeds every record, in log order, to :meth:`ShareStateReplay.apply`; then
:meth:`riverbed.share.share_partition.SharePartition.restore` turns a
:class:`PersistedShareState` back into a live share partition.

Replay rule (Kafka's ``ShareCoordinatorShard``)::

    ShareSnapshot  replaces the state: start offset, epochs, all state batches
    ShareUpdate    with the current snapshot epoch: its batches overwrite those offsets;
                   start_offset >= 0 moves the start and drops batches below it;
                   with another snapshot epoch (or before any snapshot): stale, skipped
    tombstone      forgets the share partition

What a replayed offset becomes (:meth:`~riverbed.share.share_partition.SharePartition.restore`)::

    persisted AVAILABLE (was AVAILABLE or ACQUIRED) ──▶ AVAILABLE, count kept
                                                        (ARCHIVED if count >= limit)
    persisted ACKNOWLEDGED / ARCHIVED ───────────────▶ unchanged, final
    no batch, between start and the last batch ──────▶ AVAILABLE, count 0

Crash behaviour: a crash can cut the log after any record (a truncated tail).  Each
record is self-contained (a whole snapshot, or absolute states and delivery counts for
the offsets it names, never deltas), so any prefix replays to the state as it was when
that record was written: an ACKNOWLEDGED offset stays ACKNOWLEDGED (or falls below the
start offset) in every later prefix, because no record ever moves an acknowledged offset
back to AVAILABLE except a state-epoch reset written by ``reset_start_offset``.

The topic must be ``cleanup.policy=delete``, never compacted (Kafka creates it so, "as
defined in KIP-932"): all ShareUpdate records of one share partition share one key, and
compaction would keep only the last of them, silently dropping acknowledged state.  It is
pruned instead: everything below the oldest *latest snapshot* of the share partitions in
a state partition is redundant (:class:`SnapshotOffsets`, Kafka's "last redundant
offset"), and can go with ``DeleteRecords`` / ``PartitionLog.delete_records_before``.

Pure, in memory; not thread-safe (one loader at a time).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from riverbed.protocol.records import iter_batches_with_records
from riverbed.share.share_state_records import (
    DeliveryState,
    SharePartitionKey,
    ShareStateRecord,
    ShareStateTombstone,
    StateBatch,
    decode_share_state_key,
    decode_share_state_value,
)

if TYPE_CHECKING:
    from riverbed.storage.log import PartitionLog

REPLAY_READ_BYTES = 1 << 20
_KEY_CACHE_LIMIT = 1 << 16


@dataclass(frozen=True, slots=True)
class PersistedShareState:
    """What the records say about one share partition.

    ``state_batches`` are sorted, disjoint, at or above ``start_offset`` and coalesced
    (adjacent batches of equal state and count are merged); offsets between
    ``start_offset`` and the last batch that no batch names were never persisted as
    delivered (AVAILABLE, delivery count 0).  ``updates_since_snapshot`` counts the
    ShareUpdate records applied after the snapshot, so the restored partition knows when
    its next snapshot is due.
    """

    key: SharePartitionKey
    start_offset: int
    state_epoch: int
    snapshot_epoch: int
    leader_epoch: int
    create_timestamp_ms: int
    state_batches: tuple[StateBatch, ...]
    updates_since_snapshot: int = 0


def overlay(
    batches: Iterable[StateBatch], updates: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """``batches`` with ``updates`` written over them, below ``start_offset`` dropped.

    Inputs may be in any order (where two batches of one input overlap, the later one
    wins); the result is sorted, disjoint and coalesced.  O(n + m) for sorted disjoint
    inputs, which is what this package writes.
    """
    base = _normalise(list(batches))
    upd = _normalise(list(updates))
    items: list[_Item] = []
    j = 0
    for first, last, state, count in base:
        while j < len(upd) and upd[j][1] < first:
            j += 1
        cur, k = first, j
        while cur <= last:
            if k >= len(upd) or upd[k][0] > last:
                items.append((cur, last, state, count))
                break
            if upd[k][0] > cur:
                items.append((cur, upd[k][0] - 1, state, count))
            cur = upd[k][1] + 1
            k += 1
    items.extend(upd)
    items.sort()
    out: list[StateBatch] = []
    for first, last, state, count in items:
        if last < start_offset:
            continue
        first = max(first, start_offset)
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
    return tuple(out)


_Item = tuple[int, int, DeliveryState, int]


def _normalise(batches: list[StateBatch]) -> list[_Item]:
    """Sorted and disjoint; where two overlap, the later one in ``batches`` wins."""
    items = [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in batches]
    if all(items[i][1] < items[i + 1][0] for i in range(len(items) - 1)):
        return items
    result: list[_Item] = []
    for first, last, state, count in items:
        nxt: list[_Item] = []
        for pf, pl, ps, pc in result:
            if last < pf or first > pl:
                nxt.append((pf, pl, ps, pc))
                continue
            if pf < first:
                nxt.append((pf, first - 1, ps, pc))
            if pl > last:
                nxt.append((last + 1, pl, ps, pc))
        nxt.append((first, last, state, count))
        result = nxt
    result.sort()
    return result


class SnapshotOffsets:
    """The redundant prefix of one ``__share_group_state`` partition.

    Feed it, in log order, each record appended to (or read from) one state partition with
    its log offset.  A share partition needs only its latest snapshot and what follows;
    :meth:`redundant_offset` is the lowest offset any share partition still needs, so
    every record below it may be deleted (Kafka's ``ShareCoordinatorOffsetsManager``).  A
    share partition that is never snapshotted again holds the prefix back; each one is
    snapshotted every ``snapshot_update_records`` changes.  Not thread-safe.
    """

    def __init__(self) -> None:
        self._latest: dict[SharePartitionKey, int] = {}
        self._end = 0

    def note(self, record: ShareStateRecord | ShareStateTombstone, offset: int) -> None:
        """``record`` is at ``offset`` of this state partition."""
        self._end = max(self._end, offset + 1)
        if isinstance(record, ShareStateTombstone):
            self._latest.pop(record.key, None)
        elif record.is_snapshot:
            self._latest[record.key] = offset

    def redundant_offset(self) -> int:
        """Every record below this offset is no longer needed by any replay."""
        return min(self._latest.values(), default=self._end)


class _Folded:
    """One share partition's state while replaying: a sorted, disjoint, mutable list of
    ``[first, last, state, count]`` with their firsts for bisection, so that an update
    costs O(log n + its batches) (plus list memmoves), not a rebuild of the whole state."""

    __slots__ = (
        "create_timestamp_ms",
        "firsts",
        "items",
        "key",
        "leader_epoch",
        "snapshot_epoch",
        "start_offset",
        "state_epoch",
        "updates_since_snapshot",
    )

    def __init__(self, record: ShareStateRecord) -> None:
        self.key = record.key
        self.start_offset = record.start_offset
        self.state_epoch = record.state_epoch
        self.snapshot_epoch = record.snapshot_epoch
        self.leader_epoch = record.leader_epoch
        self.create_timestamp_ms = record.create_timestamp_ms
        self.updates_since_snapshot = 0
        self.firsts: list[int] = []
        self.items: list[list[int]] = []
        for b in record.state_batches:
            self.write(b)
        self.trim(self.start_offset)

    def _split(self, offset: int) -> None:
        """Make ``offset`` the first offset of an item if an item spans it."""
        i = bisect_right(self.firsts, offset) - 1
        if i >= 0:
            item = self.items[i]
            if item[0] < offset <= item[1]:
                self.items.insert(i + 1, [offset, item[1], item[2], item[3]])
                self.firsts.insert(i + 1, offset)
                item[1] = offset - 1

    def write(self, b: StateBatch) -> None:
        """``b`` overwrites its offsets (the last one written wins)."""
        first, last = b.first_offset, b.last_offset
        if last < first:
            return
        self._split(first)
        self._split(last + 1)
        lo = bisect_left(self.firsts, first)
        hi = bisect_right(self.firsts, last)
        new = [first, last, int(b.delivery_state), b.delivery_count]
        self.items[lo:hi] = [new]
        self.firsts[lo:hi] = [first]
        # Merge with equal, contiguous neighbours so the list stays as short as the runs.
        if lo + 1 < len(self.items):
            nxt = self.items[lo + 1]
            if nxt[0] == last + 1 and nxt[2:] == new[2:]:
                new[1] = nxt[1]
                del self.items[lo + 1]
                del self.firsts[lo + 1]
        if lo > 0:
            prev = self.items[lo - 1]
            if prev[1] + 1 == first and prev[2:] == new[2:]:
                prev[1] = new[1]
                del self.items[lo]
                del self.firsts[lo]

    def trim(self, start: int) -> None:
        """Forget offsets below ``start``."""
        if start < 0 or not self.items or self.items[0][0] >= start:
            return
        self._split(start)
        k = bisect_left(self.firsts, start)
        del self.items[:k]
        del self.firsts[:k]

    def persisted(self) -> PersistedShareState:
        return PersistedShareState(
            key=self.key,
            start_offset=self.start_offset,
            state_epoch=self.state_epoch,
            snapshot_epoch=self.snapshot_epoch,
            leader_epoch=self.leader_epoch,
            create_timestamp_ms=self.create_timestamp_ms,
            state_batches=tuple(
                StateBatch(f, last, DeliveryState(st), c) for f, last, st, c in self.items
            ),
            updates_since_snapshot=self.updates_since_snapshot,
        )


class ShareStateReplay:
    """Folds ``__share_group_state`` records, in log order, into per-partition state.

    O(log n + batches) per record, n the state's batches; :meth:`state` builds the
    immutable :class:`PersistedShareState` on demand.
    """

    def __init__(self) -> None:
        self._states: dict[SharePartitionKey, _Folded] = {}
        self.skipped_updates = 0
        """Updates ignored as stale (another snapshot epoch, or no snapshot yet)."""
        self.snapshot_offsets = SnapshotOffsets()
        """Fed with the records given an ``offset``: for one state partition's replay."""
        self._keys: dict[bytes, tuple[int, SharePartitionKey]] = {}

    def apply(self, record: ShareStateRecord | ShareStateTombstone, offset: int = -1) -> None:
        """Fold one record into the state of its share partition (``offset``: its log
        offset, if known, for :attr:`snapshot_offsets`)."""
        if offset >= 0:
            self.snapshot_offsets.note(record, offset)
        if isinstance(record, ShareStateTombstone):
            self._states.pop(record.key, None)
            return
        if record.is_snapshot:
            self._states[record.key] = _Folded(record)
            return
        current = self._states.get(record.key)
        if current is None or current.snapshot_epoch != record.snapshot_epoch:
            self.skipped_updates += 1
            return
        for b in record.state_batches:
            current.write(b)
        if record.start_offset >= 0:
            current.start_offset = max(current.start_offset, record.start_offset)
        current.trim(current.start_offset)
        current.leader_epoch = max(current.leader_epoch, record.leader_epoch)
        current.updates_since_snapshot += 1

    def apply_bytes(
        self, key: bytes | memoryview, value: bytes | memoryview | None, offset: int = -1
    ) -> None:
        """Decode and fold one record (``value`` None: a tombstone).  Keys repeat (one
        per share partition and record type), so each distinct key is decoded once."""
        raw = bytes(key)
        decoded = self._keys.get(raw)
        if decoded is None:
            decoded = decode_share_state_key(raw)
            if len(self._keys) < _KEY_CACHE_LIMIT:
                self._keys[raw] = decoded
        self.apply(decode_share_state_value(decoded[0], decoded[1], value), offset)

    def state(self, key: SharePartitionKey) -> PersistedShareState | None:
        """The persisted state of one share partition, or None if none was written."""
        folded = self._states.get(key)
        return None if folded is None else folded.persisted()

    def states(self) -> dict[SharePartitionKey, PersistedShareState]:
        """Every share partition with persisted state."""
        return {key: folded.persisted() for key, folded in self._states.items()}


def replay(records: Iterable[ShareStateRecord | ShareStateTombstone]) -> ShareStateReplay:
    """Fold ``records`` (in log order) and return the replay."""
    r = ShareStateReplay()
    for record in records:
        r.apply(record)
    return r


def replay_partition_log(
    plog: PartitionLog, into: ShareStateReplay | None = None
) -> ShareStateReplay:
    """Read one ``__share_group_state`` partition from its log start to its end and fold
    every record into ``into`` (a new replay if None), with its offset.

    Reads disk: call it off the event loop (start-up).  Records that do not decode raise
    :class:`DecodeError`; a corrupt segment raises what ``PartitionLog.read`` raises.
    """
    replay = ShareStateReplay() if into is None else into
    offset, end = plog.log_start_offset, plog.log_end_offset
    while offset < end:
        data = plog.read(offset, REPLAY_READ_BYTES).records
        if not data:
            break
        for header, records in iter_batches_with_records(data, allow_partial_tail=True):
            if header.next_offset <= offset:
                continue
            if not header.is_control:
                for r in records:
                    if r.offset >= offset and r.key is not None:
                        replay.apply_bytes(r.key, r.value, r.offset)
            offset = header.next_offset
    return replay
