"""Pure micro-batch planning: admission control and offset ranges.

Nothing here talks to a broker: the stream reader fetches offsets, these functions
decide.  Invariants (checked by property tests):

* :func:`rate_limit` never moves a partition backwards nor past its latest offset, admits
  at most ``max_rows`` records in total, admits everything when the backlog fits, and
  makes progress whenever there is a backlog and ``max_rows >= 1``.
* :func:`offset_ranges` yields one ``[from_offset, until_offset)`` range per partition with
  records to read, in (topic, partition) order, so a replayed batch plans identically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from riverbed.protocol.topic_partition import TopicPartition
from riverbed.spark.offsets import PartitionOffsets


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Records ``[from_offset, until_offset)`` of one partition: one Spark input partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int
) -> PartitionOffsets:
    """End offsets admitting at most ``max_rows`` records, split in proportion to backlog.

    ``start`` must hold every partition of ``latest`` (new partitions at their log start).
    Each partition gets ``floor(max_rows * backlog / total)``; the rows left over go one
    each to the partitions with the largest remainders (ties in partition order).
    """
    backlog = {tp: max(0, latest[tp] - start[tp]) for tp in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return {tp: max(start[tp], latest[tp]) for tp in latest}
    share = {tp: (max_rows * n) // total for tp, n in backlog.items()}
    leftover = max_rows - sum(share.values())
    by_remainder = sorted(
        (tp for tp in backlog if share[tp] < backlog[tp]),
        key=lambda tp: (-((max_rows * backlog[tp]) % total), tp),
    )
    for tp in by_remainder[:leftover]:
        share[tp] += 1
    return {tp: start[tp] + share[tp] for tp in latest}


def offset_ranges(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
) -> list[OffsetRange]:
    """The non-empty ranges between two checkpoint offsets (partitions only in ``end``
    must already be in ``start`` at their log start offset)."""
    ranges = []
    for tp in sorted(end):
        begin = start[tp]
        if end[tp] > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, end[tp]))
    return ranges
