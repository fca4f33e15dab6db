"""Log compaction (cleanup.policy ``compact`` / ``compact,delete``), Kafka's LogCleaner.

A pass over one log:

1. **Cleanable range**: the sealed segments (never the active one) from the log start,
   stopping at the first segment holding a record younger than min.compaction.lag.ms.
2. **Offset map**: key -> latest offset, over the dirty part of that range (from the
   cleaner checkpoint, ``cleaner_offset``, to the end of the range).
3. **Rewrite**, segment by segment in offset order.  A record is kept unless a later
   record with the same key is in the map.  Records without a key are kept.  A tombstone
   (null value) that is kept gets a delete horizon (``now + delete.retention.ms``,
   written in the batch as Kafka's deleteHorizonMs attribute); once the horizon has
   passed, a later pass drops it.  Control batches are copied verbatim.  Rewritten
   batches keep their base offset, last offset delta, producer id/epoch and base
   sequence (:func:`riverbed.protocol.records.rebuild_batch`); a batch left with no
   records is dropped, except a producer's last batch, kept empty for its sequence.
   Offsets are never renumbered or reordered.
4. **Swap**, per segment: write ``<base>.log.cleaned``, fsync; then, under the log's
   locks, rename it to ``<base>.log.swap`` and fsync the directory (the commit point),
   replace ``<base>.log`` with it and rebuild the indexes.  Recovery deletes ``.cleaned``
   files and completes ``.swap`` files, so a crash leaves each segment either old or
   new.  Because segments are swapped in offset order, a crash between two swaps leaves
   a new prefix and an old suffix: a tombstone can only have been dropped after every
   older value of its key, so no deleted key can reappear.
5. The cleaner checkpoint advances to the end of the cleaned range.

Thread-safety: one cleaner thread per LogManager; it reads segments with pread while
appends continue, and swaps under the log's locks.  A segment that changed meanwhile
(truncation, deletion) makes the pass abort without harm.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from riverbed.clock import Clock
from riverbed.protocol.batch import ATTR_DELETE_HORIZON, BatchHeader
from riverbed.protocol.records import Record, read_batch, rebuild_batch
from riverbed.storage.log import PartitionLog
from riverbed.storage.recovery import CLEANED_SUFFIX
from riverbed.storage.segment import LogSegment

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CleanResult:
    segments: int
    bytes_before: int
    bytes_after: int
    records_removed: int
    end_offset: int


def _batches(seg: LogSegment) -> list[tuple[int, BatchHeader]]:
    return list(seg.scan(0, verify=False))


class LogCleaner:
    """Compacts logs one pass at a time; :meth:`clean` is called by the LogManager."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._horizons: dict[Path, int] = {}  # earliest pending delete horizon per log

    def needs_cleaning(self, plog: PartitionLog) -> bool:
        if not plog.config.compact:
            return False
        segments = plog.segments()
        if len(segments) < 2:
            return False
        horizon = self._horizons.get(plog.directory)
        return plog.cleaner_offset < segments[-1].base_offset or (
            horizon is not None and self._clock.now_ms() >= horizon
        )

    def clean(self, plog: PartitionLog) -> CleanResult | None:
        """One compaction pass over ``plog``; None when there is nothing to do."""
        config = plog.config
        if not config.compact:
            return None
        now = self._clock.now_ms()
        cleanable: list[LogSegment] = []
        for seg in plog.segments()[:-1]:
            lag = config.min_compaction_lag_ms
            if lag > 0 and seg.max_timestamp > now - lag:
                break
            cleanable.append(seg)
        cleanable = [s for s in cleanable if s.next_offset > plog.log_start_offset]
        if not cleanable:
            return None
        end = cleanable[-1].next_offset
        try:
            offset_map = self._build_offset_map(cleanable, max(plog.cleaner_offset,
                                                               plog.log_start_offset))
            last_batch = {pid: e.batches[-1].last_offset
                          for pid, e in list(plog.producers.entries.items()) if e.batches}
            before = after = removed = 0
            self._horizons.pop(plog.directory, None)
            for seg in cleanable:
                size = seg.size
                data, dropped = self._clean_segment(seg, offset_map, last_batch, now,
                                                    config.delete_retention_ms, plog.directory)
                before += size
                after += len(data)
                removed += dropped
                if dropped == 0 and len(data) == size:
                    continue
                if not self._swap(plog, seg, size, data):
                    return None
        except (OSError, ValueError) as exc:
            log.warning("compaction of %s aborted: %s", plog.directory.name, exc)
            return None
        plog.set_cleaner_offset(end)
        return CleanResult(len(cleanable), before, after, removed, end)

    def _build_offset_map(self, segments: list[LogSegment], first_dirty: int) -> dict[bytes, int]:
        offset_map: dict[bytes, int] = {}
        for seg in segments:
            if seg.next_offset <= first_dirty:
                continue
            for pos, header in _batches(seg):
                if header.is_control or header.last_offset < first_dirty:
                    continue
                _h, records = read_batch(seg.pread(pos, header.size))
                for r in records:
                    if r.key is not None and r.offset >= first_dirty:
                        offset_map[r.key] = r.offset
        return offset_map

    def _clean_segment(self, seg: LogSegment, offset_map: dict[bytes, int],
                       last_batch: dict[int, int], now: int, delete_retention_ms: int,
                       directory: Path) -> tuple[bytes, int]:
        out = bytearray()
        dropped = 0
        for pos, header in _batches(seg):
            raw = seg.pread(pos, header.size)
            if header.is_control:
                out += raw
                continue
            _h, records = read_batch(raw)
            has_horizon = bool(header.attributes & ATTR_DELETE_HORIZON)
            kept: list[Record] = []
            for r in records:
                if r.key is not None and offset_map.get(r.key, -1) > r.offset:
                    continue
                if r.value is None and has_horizon and now >= header.base_timestamp:
                    continue
                kept.append(r)
            dropped += len(records) - len(kept)
            tombstones = any(r.value is None for r in kept)
            new_horizon = now + delete_retention_ms if tombstones and not has_horizon else None
            if tombstones:
                horizon = new_horizon if new_horizon is not None else header.base_timestamp
                self._horizons[directory] = min(self._horizons.get(directory, horizon), horizon)
            if len(kept) == len(records) and new_horizon is None:
                out += raw
            elif kept or last_batch.get(header.producer_id) == header.last_offset:
                out += rebuild_batch(header, kept, delete_horizon_ms=new_horizon)
        return bytes(out), dropped

    def _swap(self, plog: PartitionLog, seg: LogSegment, size: int, data: bytes) -> bool:
        cleaned = seg.log_path.with_name(seg.log_path.name + CLEANED_SUFFIX)
        with open(cleaned, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return plog.replace_segment(seg, size, cleaned)
