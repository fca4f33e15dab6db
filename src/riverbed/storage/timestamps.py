"""Offset lookup by timestamp (ListOffsets): the first record with timestamp >= target.

Segments are skipped by their max timestamp; inside a segment the time index gives the
last offset known to lie below the target, the offset index a file position near it,
and batch headers (``maxTimestamp``) pick the batch.  Only that one batch is decoded
(:func:`riverbed.protocol.records.read_batch`) to find the exact record, as Kafka does.

Not thread-safe: called under the owning log's lock.
"""

from __future__ import annotations

from riverbed.errors import RiverbedError
from riverbed.protocol.records import read_batch
from riverbed.storage.segment import LogSegment


def find_offset_for_timestamp(segments: list[LogSegment], ts_ms: int,
                              log_start_offset: int) -> tuple[int, int] | None:
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
