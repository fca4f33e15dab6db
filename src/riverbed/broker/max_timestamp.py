"""ListOffsets ``-3`` (KIP-734): the offset of the record with the largest timestamp.

Kafka's answer (``UnifiedLog.fetchOffsetByTimestamp``) is found in three steps, and this
module takes the same ones so the two brokers agree record for record:

1. the segment with the largest ``max_timestamp`` (the first such segment on a tie);
2. in it, the first batch whose header ``max_timestamp`` equals that value, searched
   from the batch the segment names as holding it (``offset_of_max_timestamp``, a hint
   that may point past the batch after a restart, so the search falls back to the
   segment's start);
3. in that batch, the first record whose timestamp equals it (``RecordBatch
   .offsetOfMaxTimestamp``): the base offset for LogAppendTime batches, otherwise the
   one batch is decoded (decompressed if need be).

Cost: one index lookup and a header scan of part of one segment, plus one batch decode;
ListOffsets -3 is rare (admin tools), so it runs inline on the event loop.  Read-only:
the segments are read with positional reads and a concurrent append is harmless (a
batch appended after the snapshot is simply not considered).  Returns None for a log
without timestamped batches, which the handler answers as offset -1, timestamp -1.
"""

from __future__ import annotations

from riverbed.protocol.batch import ATTR_TIMESTAMP_TYPE, BatchHeader
from riverbed.protocol.records import read_batch
from riverbed.storage import PartitionLog
from riverbed.storage.segment import LogSegment


def offset_of_max_timestamp(plog: PartitionLog) -> tuple[int, int] | None:
    """``(offset, timestamp)`` of the first record with the log's largest timestamp."""
    best: LogSegment | None = None
    for segment in plog.segments():
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
