"""Helpers of the pre-zeroed segment space tests (test_preallocate*.py): logs with a small
index interval on a manual clock, fsynced appends, and the file beyond a segment's
logical end."""

from __future__ import annotations

import os
from pathlib import Path

from _batches import batch

from riverbed.clock import ManualClock
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.flusher import GroupCommitFlusher
from riverbed.storage.segment import LogSegment

BIG = 1 << 30
UNBOUNDED = 1 << 50  # a zero-window budget no test reaches


def open_log(
    directory: Path,
    segment_bytes: int = BIG,
    *,
    flusher: GroupCommitFlusher | None = None,
    clock: ManualClock | None = None,
    **extra: object,
) -> PartitionLog:
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=256, **extra)  # type: ignore[arg-type]
    return PartitionLog.open(directory, config, clock=clock or ManualClock(), flusher=flusher)


def append_flushed(log: PartitionLog, value: bytes, key: bytes | None = None) -> int:
    """Append one record and wait for its fsync (acks=all); its offset."""
    result = log.append(batch(value, key=key))
    log.flush_future(result.last_offset).result(timeout=60)
    return result.last_offset


def values(n: int, size: int = 100, tag: bytes = b"") -> list[bytes]:
    return [tag + b"%06d-" % i + b"v" * size for i in range(n)]


def append_values(log: PartitionLog, n: int) -> list[bytes]:
    """Append :func:`values` ``(n)`` one fsynced record at a time; the values."""
    written = values(n)
    for v in written:
        append_flushed(log, v)
    return written


def tail_is_zeros(seg: LogSegment) -> bool:
    """Only zeros (or nothing) after the segment's logical end."""
    with open(seg.log_path, "rb") as f:
        f.seek(seg.size)
        tail = f.read()
    return tail.count(0) == len(tail)


def file_size(seg: LogSegment) -> int:
    return os.path.getsize(seg.log_path)
