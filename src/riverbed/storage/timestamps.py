"""Offset lookups by timestamp (ListOffsets): by target timestamp, and for the largest one.

:func:`find_offset_for_timestamp` -- the first record with timestamp >= target.  Segments
are skipped by their max timestamp; inside a segment the time index gives the last offset
known to lie below the target, the offset index a file position near it, and batch headers
(``maxTimestamp``) pick the batch.  Only that one batch is decoded
(:func:`riverbed.protocol.records.read_batch`) to find the exact record, as Kafka does.
Not thread-safe: called under the owning log's lock.

:func:`offset_of_max_timestamp` -- ListOffsets ``-3`` (KIP-734): the offset of the record
with the largest timestamp.  Kafka's answer (``UnifiedLog.fetchOffsetByTimestamp``) is
found in three steps, taken here the same way so the two brokers agree record for record:

1. the segment with the largest ``max_timestamp`` (the first such segment on a tie);
2. in it, the first batch whose header ``max_timestamp`` equals that value, searched
   from the batch the segment names as holding it (``offset_of_max_timestamp``, a hint
   that may point past the batch after a restart, so the search falls back to the
   segment's start);
3. in that batch, the first record whose timestamp equals it (``RecordBatch
   .offsetOfMaxTimestamp``): the base offset for LogAppendTime batches, otherwise the
   one batch is decoded (decompressed if need be).

Cost: one index lookup and a header scan of part of one segment, plus one batch decode;
ListOffsets -3 is rare (admin tools), so the broker runs it inline on the event loop.
Read-only and safe without the log's lock: it takes a snapshot of the segment list
(``PartitionLog.segments()``) and reads with positional reads, so a concurrent append is
harmless (a batch appended after the snapshot is simply not considered).  Returns None
for a log without timestamped batches, which the handler answers as offset -1,
timestamp -1.
"""

from __future__ import annotations

from collections.abc import Sequence

from riverbed.errors import RiverbedError
from riverbed.protocol.batch import ATTR_TIMESTAMP_TYPE, BatchHeader
from riverbed.protocol.records import read_batch
from riverbed.storage.segment import LogSegment


def find_offset_for_timestamp(
    segments: list[LogSegment], ts_ms: int, log_start_offset: int
) -> tuple[int, int] | None:
    """``(offset, timestamp)`` of the first record at or after ``log_start_offset`` whose
    timestamp is >= ``ts_ms``, or None if there is none."""
    for seg in segments:
        if seg.max_timestamp < ts_ms or seg.next_offset <= log_start_offset:
            continue
        below = seg.time_index.last_offset_below(ts_ms)
        start = max(log_start_offset, seg.base_offset if below is None else below + 1)
        for pos, header in seg.scan(seg.offset_index.lookup(start), verify=False):
            if header.last_offset < start or header.max_timestamp < ts_ms:
                continue
            try:
                _h, records = read_batch(seg.pread(pos, header.size))
            except RiverbedError:
                return header.base_offset, header.max_timestamp
            for record in records:
                if record.offset >= log_start_offset and record.timestamp >= ts_ms:
                    return record.offset, record.timestamp
    return None


def offset_of_max_timestamp(segments: Sequence[LogSegment]) -> tuple[int, int] | None:
    """``(offset, timestamp)`` of the first record with the largest timestamp in
    ``segments`` (a snapshot of one log's segment list, oldest first)."""
    best: LogSegment | None = None
    for segment in segments:
        if segment.max_timestamp >= 0 and (
            best is None or segment.max_timestamp > best.max_timestamp
        ):
            best = segment
    if best is None:
        return None
    found = _find_batch(best, best.max_timestamp)
    if found is None:
        return None
    position, header = found
    if header.attributes & ATTR_TIMESTAMP_TYPE:  # LogAppendTime: every record has it
        return header.base_offset, header.max_timestamp
    _, records = read_batch(best.pread(position, header.size))
    for record in records:
        if record.timestamp == header.max_timestamp:
            return record.offset, record.timestamp
    return header.last_offset, header.max_timestamp  # a header that lies: its last record


def _find_batch(segment: LogSegment, timestamp: int) -> tuple[int, BatchHeader] | None:
    hint = segment.locate(segment.offset_of_max_timestamp)
    starts = [0] if hint is None or hint[0] == 0 else [hint[0], 0]
    for start in starts:
        for position, header in segment.scan(start, verify=False):
            if header.max_timestamp == timestamp:
                return position, header
    return None
