"""Retention decisions (cleanup.policy ``delete``): which whole segments may go.

Pure functions over a log's segment list, so they are tested without files:

* time  - a segment may be deleted when its largest record timestamp is older than
  ``now - retention.ms`` (Kafka's rule; -1 keeps forever);
* size  - while the log minus its oldest segment is still >= ``retention.bytes``, the
  oldest segment goes (-1 = unlimited).

Only a prefix of the log is ever deleted and never the active (last) segment; the caller
rolls an expired active segment first (:func:`active_segment_expired`) and then advances
the log start offset to the first remaining segment's base offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from riverbed.storage.config import LogConfig


class SegmentInfo(Protocol):
    @property
    def size(self) -> int: ...

    @property
    def max_timestamp(self) -> int: ...


def _expired(seg: SegmentInfo, config: LogConfig, now_ms: int) -> bool:
    return config.retention_ms >= 0 and now_ms - seg.max_timestamp > config.retention_ms


def deletable_segments(segments: Sequence[SegmentInfo], config: LogConfig, now_ms: int) -> int:
    """How many leading segments retention deletes (never the last one)."""
    count = 0
    remaining = sum(s.size for s in segments)
    for seg in segments[:-1]:
        by_size = config.retention_bytes >= 0 and remaining - seg.size >= config.retention_bytes
        if not (by_size or _expired(seg, config, now_ms)):
            break
        remaining -= seg.size
        count += 1
    return count


def active_segment_expired(segments: Sequence[SegmentInfo], config: LogConfig, now_ms: int) -> bool:
    """True when every segment, the non-empty active one included, is past retention.ms."""
    active = segments[-1]
    return active.size > 0 and all(_expired(s, config, now_ms) for s in segments)
