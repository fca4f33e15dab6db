"""Log compaction (cleanup.policy ``compact`` / ``compact,delete``), Kafka's LogCleaner.

When a log is cleaned (:meth:`LogCleaner.needs_cleaning`, Kafka's rules):

* ``dirty ratio = dirty bytes / (clean bytes + dirty bytes)`` over the cleanable part of
  the log, where clean bytes are the segments wholly below the cleaner checkpoint
  (``cleaner_offset``, the first dirty offset) and dirty bytes the segments from there
  to the first uncleanable offset.  A log is cleaned when the ratio is above
  ``min.cleanable.dirty.ratio``, or when its oldest dirty segment's first batch is older
  than ``max.compaction.lag.ms`` (it is then cleaned whatever the ratio), or when a kept
  tombstone's delete horizon has passed.
* The **first uncleanable offset** is the active segment's base offset, or the base of
  the first dirty segment holding a record younger than ``min.compaction.lag.ms``, or
  the base of the segment holding the last stable offset (an open transaction's data
  is never cleaned, as in Kafka).

A pass over one log (:meth:`LogCleaner.clean`):

1. **Offset map** over the dirty section, batch by batch, into a bounded
   :class:`~riverbed.storage.offset_map.OffsetMap` (``log.cleaner.dedupe.buffer.size``).
   If it fills, the pass only covers offsets up to the last batch that fitted (``end``);
   records at or after ``end`` are kept untouched and cleaned by a later pass.  Records
   of aborted transactions (:class:`~riverbed.storage.transactions.AbortedBatches` over
   the log's ``.txnindex`` entries) never enter the map, so they shadow nothing.
2. **Groups**: the segments from the log start below ``end`` are grouped, in order,
   into runs whose total size is at most ``segment.bytes`` (and whose offsets fit a
   32-bit relative offset), Kafka's ``groupSegmentsBySize``; each group becomes ONE
   cleaned segment, so compaction also shrinks the segment count.
3. **Rewrite**, streaming, batch by batch into ``<first base>.log.cleaned`` (one batch
   in memory at a time).  A record is kept unless a later record with the same key is
   in the map.  Records without a key are kept.  A tombstone (null value) that is kept
   gets a delete horizon (``now + delete.retention.ms``, Kafka's deleteHorizonMs batch
   attribute); once it has passed, a later pass drops it.  A batch of an aborted
   transaction loses all its records (Kafka's rule).  A transaction marker that no
   longer guards any data (:class:`~riverbed.storage.transactions.CleanedTransactions`:
   no batch of its transaction is left before it) gets a delete horizon the same way
   and is dropped by a pass after it, its ``.txnindex`` entry with it; other markers are
   copied, and the group's other ``.txnindex`` entries move to the cleaned segment.
   Rewritten batches keep base offset, last offset delta, producer id/epoch and base
   sequence (:func:`riverbed.protocol.records.rebuild_batch`); a batch left with no
   records is dropped, except a producer's last batch (its sequence must survive), as
   Kafka does: clients never see other empty batches (kafka-go v0.4.51 cannot read
   one).  A cleaned segment may therefore end before its group did (even be empty);
   the group's end is recorded beside the swap (``<base>.swapend``) for recovery.
   Offsets are never renumbered or reordered.
4. **Swap**, per group: fsync the ``.cleaned`` file; under the log's locks rename it to
   ``.log.swap`` and fsync the directory (the commit point), retire the old segments
   (renamed ``.deleted``, removed after ``file.delete.delay.ms``), rename the swap to
   ``<first base>.log`` and rebuild its indexes.  Recovery deletes ``.cleaned`` files,
   and completes a ``.swap`` by deleting every segment in its offset range, so a crash
   leaves each group either old or new.  Groups are swapped in offset order, so a crash
   between two swaps leaves a new prefix and an old suffix: a tombstone is only dropped
   after every older value of its key, so no deleted key can reappear.
5. The cleaner checkpoint advances to ``end``.

A group left unchanged (one segment, nothing dropped) is not swapped.

Thread-safety: one cleaner thread per LogManager; it reads segments with pread while
appends continue, and swaps under the log's locks.  A group that changed meanwhile
(truncation, retention) makes the pass abort without harm.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from riverbed.clock import Clock
from riverbed.errors import CorruptSegmentError
from riverbed.protocol.batch import ATTR_DELETE_HORIZON, BatchHeader
from riverbed.protocol.records import Record, read_batch, rebuild_batch
from riverbed.storage.config import LogConfig
from riverbed.storage.log import PartitionLog
from riverbed.storage.offset_map import DEFAULT_DEDUPE_BUFFER_SIZE, OffsetMap
from riverbed.storage.recovery import CLEANED_SUFFIX
from riverbed.storage.segment import LogSegment
from riverbed.storage.transactions import AbortedBatches, CleanedTransactions

log = logging.getLogger(__name__)

_MAX_RELATIVE = 0x7FFFFFFF
_WRITE_BUFFER = 1 << 20


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What one pass did: ``segments`` in, ``segments_after`` out, bytes before/after."""

    segments: int
    bytes_before: int
    bytes_after: int
    records_removed: int
    end_offset: int
    segments_after: int = 0
    map_full: bool = False


@dataclass(frozen=True, slots=True)
class DirtyStats:
    """A log's cleanable state right now (see the module docstring)."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    overdue: bool  # the oldest dirty segment is past max.compaction.lag.ms

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


@dataclass(frozen=True, slots=True)
class CleanerStatus:
    """A log's cleaner status: its dirty ratio now and what the last pass did."""

    dirty_ratio: float
    dirty_bytes: int
    first_dirty_offset: int
    last_run_ms: int  # -1: never
    last_result: CleanResult | None
    last_error: str | None
    bytes_cleaned_total: int


@dataclass(slots=True)
class _History:
    last_run_ms: int = -1
    last_result: CleanResult | None = None
    last_error: str | None = None
    bytes_cleaned_total: int = 0


def dirty_stats(
    segments: list[LogSegment],
    log_start: int,
    cleaner_offset: int,
    config: LogConfig,
    now_ms: int,
    last_stable_offset: int | None = None,
) -> DirtyStats:
    """Measure the cleanable part of a log (a snapshot of its segment list)."""
    first_dirty = max(cleaner_offset, log_start)
    uncleanable = segments[-1].base_offset
    if last_stable_offset is not None:
        holding = [s.base_offset for s in segments if s.base_offset <= last_stable_offset]
        if holding:
            uncleanable = min(uncleanable, holding[-1])
    lag = config.min_compaction_lag_ms
    sealed = [s for s in segments[:-1] if s.next_offset > log_start]
    if lag > 0:
        for seg in sealed:
            if seg.next_offset > first_dirty and seg.max_timestamp > now_ms - lag:
                uncleanable = seg.base_offset
                break
    clean = sum(s.size for s in sealed if s.next_offset <= first_dirty)
    dirty_segs = [s for s in sealed if s.next_offset > first_dirty and s.base_offset < uncleanable]
    overdue = False
    if dirty_segs and config.max_compaction_lag_ms < (1 << 63) - 1:
        first_ts = dirty_segs[0].first_batch_timestamp
        overdue = first_ts >= 0 and now_ms - first_ts > config.max_compaction_lag_ms
    return DirtyStats(first_dirty, uncleanable, clean, sum(s.size for s in dirty_segs), overdue)


def group_segments_by_size(segments: list[LogSegment], max_size: int) -> list[list[LogSegment]]:
    """Consecutive runs of total size <= ``max_size`` (a segment bigger than that is
    alone) whose offsets fit a 32-bit relative offset (Kafka's groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    for seg in segments:
        if groups:
            group = groups[-1]
            size = sum(s.size for s in group)
            if (
                size + seg.size <= max_size
                and seg.next_offset - 1 - group[0].base_offset <= _MAX_RELATIVE
            ):
                group.append(seg)
                continue
        groups.append([seg])
    return groups


class LogCleaner:
    """Compacts logs one pass at a time; the LogManager calls :meth:`clean`."""

    def __init__(
        self, clock: Clock, *, dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE
    ) -> None:
        self._clock = clock
        self.dedupe_buffer_size = dedupe_buffer_size
        self._horizons: dict[Path, int] = {}  # earliest pending delete horizon per log
        self._history: dict[Path, _History] = {}

    # -- when ------------------------------------------------------------------------

    def _stats(self, plog: PartitionLog) -> DirtyStats:
        return dirty_stats(
            plog.segments(),
            plog.log_start_offset,
            plog.cleaner_offset,
            plog.config,
            self._clock.now_ms(),
            plog.last_stable_offset,
        )

    def needs_cleaning(self, plog: PartitionLog) -> bool:
        config = plog.config
        if not config.compact or len(plog.segments()) < 2:
            return False
        stats = self._stats(plog)
        if stats.dirty_bytes > 0 and (
            stats.overdue or stats.dirty_ratio > config.min_cleanable_dirty_ratio
        ):
            return True
        horizon = self._horizons.get(plog.directory)
        return horizon is not None and self._clock.now_ms() >= horizon

    def status(self, plog: PartitionLog) -> CleanerStatus:
        stats = self._stats(plog)
        h = self._history.get(plog.directory, _History())
        return CleanerStatus(
            stats.dirty_ratio,
            stats.dirty_bytes,
            stats.first_dirty_offset,
            h.last_run_ms,
            h.last_result,
            h.last_error,
            h.bytes_cleaned_total,
        )

    # -- a pass ----------------------------------------------------------------------

    def clean(self, plog: PartitionLog) -> CleanResult | None:
        """One compaction pass over ``plog``; None when there is nothing to do."""
        config = plog.config
        if not config.compact:
            return None
        now = self._clock.now_ms()
        history = self._history.setdefault(plog.directory, _History())
        segments = plog.segments()
        log_start = plog.log_start_offset
        stats = dirty_stats(
            segments, log_start, plog.cleaner_offset, config, now, plog.last_stable_offset
        )
        sealed = [
            s
            for s in segments[:-1]
            if s.next_offset > log_start and s.base_offset < stats.first_uncleanable_offset
        ]
        if not sealed:
            return None
        first_dirty = stats.first_dirty_offset
        try:
            offset_map = OffsetMap(self.dedupe_buffer_size)
            upper = sealed[-1].next_offset
            full = self._build_offset_map(
                sealed,
                first_dirty,
                offset_map,
                AbortedBatches(plog.collect_aborted_transactions(first_dirty, upper)),
            )
            end = max(offset_map.latest_offset + 1, first_dirty)
            if full and offset_map.latest_offset < first_dirty:
                raise ValueError(
                    f"log.cleaner.dedupe.buffer.size {self.dedupe_buffer_size} "
                    "cannot hold the keys of one record batch"
                )
            end = min(end, sealed[-1].next_offset)
            groups = group_segments_by_size(
                [s for s in sealed if s.base_offset < end], config.segment_bytes
            )
            if not groups:  # only cleaned-out (empty) segments below ``end``
                return None
            producers_last = {
                pid: e.batches[-1].last_offset
                for pid, e in list(plog.producers.entries.items())
                if e.batches
            }
            self._horizons.pop(plog.directory, None)
            before = after = removed = 0
            txns = CleanedTransactions(
                plog.collect_aborted_transactions(groups[0][0].base_offset, upper)
            )
            for group in groups:
                done = self._clean_group(plog, group, offset_map, end, producers_last, now, txns)
                if done is None:
                    history.last_error = "aborted: the log changed during the pass"
                    return None
                before += done[0]
                after += done[1]
                removed += done[2]
        except (OSError, ValueError, CorruptSegmentError) as exc:
            log.warning("compaction of %s aborted: %s", plog.directory.name, exc)
            history.last_error = str(exc)
            return None
        plog.set_cleaner_offset(end)
        result = CleanResult(
            sum(len(g) for g in groups),
            before,
            after,
            removed,
            end,
            segments_after=len(groups),
            map_full=full,
        )
        history.last_run_ms = now
        history.last_result = result
        history.last_error = None
        history.bytes_cleaned_total += before
        return result

    def _build_offset_map(
        self,
        segments: list[LogSegment],
        first_dirty: int,
        offset_map: OffsetMap,
        aborted: AbortedBatches,
    ) -> bool:
        """Fill ``offset_map`` from ``first_dirty`` on (aborted data left out); True if
        it filled up."""
        for seg in segments:
            if seg.next_offset <= first_dirty:
                continue
            for pos, header in seg.scan(seg.offset_index.lookup(first_dirty), verify=False):
                if header.last_offset < first_dirty:
                    continue
                keyed: list[tuple[bytes, int]] = []
                dropped = aborted.is_aborted(header)  # it must see every batch, in order
                if not header.is_control and not dropped:
                    _h, records = read_batch(seg.pread(pos, header.size))
                    keyed = [
                        (r.key, r.offset)
                        for r in records
                        if r.key is not None and r.offset >= first_dirty
                    ]
                if not offset_map.put_batch(keyed, header.last_offset):
                    return True
        return False

    def _clean_group(
        self,
        plog: PartitionLog,
        group: list[LogSegment],
        offset_map: OffsetMap,
        end: int,
        producers_last: dict[int, int],
        now: int,
        txns: CleanedTransactions,
    ) -> tuple[int, int, int] | None:
        """Write the group's cleaned segment and swap it in; (bytes before, after,
        records removed), or None if the log changed under the pass."""
        first = group[0]
        sizes = [s.size for s in group]
        cleaned = first.log_path.with_name(first.log_path.name + CLEANED_SUFFIX)
        written = removed = 0
        removed_markers: list[int] = []
        changed = len(group) > 1
        batches = (
            (seg, pos, header)
            for seg, size in zip(group, sizes, strict=True)
            for pos, header in seg.scan_checked(size)
        )
        try:
            with open(cleaned, "wb", buffering=_WRITE_BUFFER) as f:
                for seg, pos, header in batches:
                    raw = seg.pread(pos, header.size)
                    producer_last = producers_last.get(header.producer_id)
                    keep_empty = producer_last == header.last_offset
                    if header.is_control:
                        out, dropped = self._clean_marker(
                            plog, raw, header, txns, end, keep_empty, now
                        )
                        if out is None:
                            removed_markers.append(header.base_offset)
                    elif txns.on_data(header) and header.base_offset < end:
                        out, dropped = self._drop_batch(raw, header, keep_empty)
                    else:
                        out, dropped = self._clean_batch(
                            plog.directory,
                            raw,
                            header,
                            offset_map,
                            end,
                            keep_empty,
                            now,
                            plog.config.delete_retention_ms,
                        )
                    removed += dropped
                    changed = changed or out is not raw
                    if out is not None:
                        f.write(out)
                        written += len(out)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            cleaned.unlink(missing_ok=True)
            raise
        if not changed:
            cleaned.unlink(missing_ok=True)
            return sizes[0], sizes[0], 0
        if not plog.replace_segments(group, sizes, cleaned, removed_markers):
            return None
        return sum(sizes), written, removed

    def _clean_marker(
        self,
        plog: PartitionLog,
        raw: bytes,
        header: BatchHeader,
        txns: CleanedTransactions,
        end: int,
        keep_empty: bool,
        now: int,
    ) -> tuple[bytes | None, int]:
        """A control batch: kept while it guards data, else given a delete horizon and,
        once that has passed, dropped (None)."""
        free = txns.on_marker(header)
        if not free or header.base_offset >= end:
            return raw, 0
        if header.attributes & ATTR_DELETE_HORIZON:
            if now >= header.base_timestamp:
                return (raw if keep_empty else None), 0
            horizon = header.base_timestamp
            out = raw
        else:
            horizon = now + plog.config.delete_retention_ms
            _h, records = read_batch(raw)
            out = rebuild_batch(header, records, delete_horizon_ms=horizon)
        self._horizons[plog.directory] = min(self._horizons.get(plog.directory, horizon), horizon)
        return out, 0

    @staticmethod
    def _drop_batch(
        raw: bytes,
        header: BatchHeader,
        keep_empty: bool,
    ) -> tuple[bytes | None, int]:
        """An aborted transaction's batch: all its records go (the batch stays, empty,
        when ``keep_empty``)."""
        _h, records = read_batch(raw)
        return (rebuild_batch(header, []) if keep_empty else None), len(records)

    def _clean_batch(
        self,
        directory: Path,
        raw: bytes,
        header: BatchHeader,
        offset_map: OffsetMap,
        end: int,
        keep_empty: bool,
        now: int,
        delete_retention_ms: int,
    ) -> tuple[bytes | None, int]:
        """The batch to write instead of ``raw`` (``raw`` itself when unchanged, None to
        drop it) and how many records went."""
        if header.is_control or header.base_offset >= end:
            return raw, 0
        _h, records = read_batch(raw)
        has_horizon = bool(header.attributes & ATTR_DELETE_HORIZON)
        kept: list[Record] = []
        for r in records:
            if r.key is not None and offset_map.get(r.key) > r.offset:
                continue
            if r.value is None and has_horizon and now >= header.base_timestamp:
                continue
            kept.append(r)
        tombstones = any(r.value is None for r in kept)
        new_horizon = now + delete_retention_ms if tombstones and not has_horizon else None
        if tombstones:
            horizon = new_horizon if new_horizon is not None else header.base_timestamp
            self._horizons[directory] = min(self._horizons.get(directory, horizon), horizon)
        dropped = len(records) - len(kept)
        if dropped == 0 and new_horizon is None:
            return raw, 0
        if kept or keep_empty:
            return rebuild_batch(header, kept, delete_horizon_ms=new_horizon), dropped
        return None, dropped
