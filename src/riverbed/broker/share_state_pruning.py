"""Pruning ``__share_group_state``: deleting the prefix no replay needs any more.

The topic is never compacted and never expired by time (its ShareUpdates share one key),
so it is pruned as Kafka's share coordinator prunes it: a share partition needs only its
latest snapshot and what follows it; below the oldest such snapshot of a state partition
every record is redundant (:class:`~riverbed.share.share_state_log.SnapshotOffsets`) and
``DeleteRecords`` removes it.  :class:`StatePruner` keeps one ``SnapshotOffsets`` per
state partition, fed with every record appended (and, at start, replayed) with its log
offset, and deletes the redundant prefix on the loop's default executor once it is at
least :data:`PRUNE_MIN_RECORDS` long, one deletion per partition at a time.

A share partition that stops changing holds the prefix back with its old snapshot: the
owner re-snapshots those every ``share.coordinator.cold.partition.snapshot.interval.ms``
(:data:`COLD_SNAPSHOT_INTERVAL_MS`, Kafka's default 5 minutes).

Crash behaviour: deleting is ``PartitionLog.delete_records_before`` (the new log start is
persisted before segments go); a crash before it leaves more to replay, never less.
Event-loop only (the deletion itself runs on a worker thread).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from riverbed.share.share_state_log import SnapshotOffsets
from riverbed.share.share_state_records import ShareStateRecord, ShareStateTombstone

if TYPE_CHECKING:
    from riverbed.storage.log import PartitionLog

log = logging.getLogger(__name__)

PRUNE_MIN_RECORDS = 1_000
COLD_SNAPSHOT_INTERVAL_MS = 300_000
COLD_SNAPSHOT_KEY = "share.coordinator.cold.partition.snapshot.interval.ms"


class StatePruner:
    """Tracks each state partition's redundant prefix and deletes it (module docstring)."""

    def __init__(self, partition_log: Callable[[int], PartitionLog]) -> None:
        self._partition_log = partition_log
        self._offsets: dict[int, SnapshotOffsets] = {}
        self._running: dict[int, asyncio.Future[int]] = {}
        self.min_records = PRUNE_MIN_RECORDS

    def replayed(self, partition: int, offsets: SnapshotOffsets) -> None:
        """Start from what the replay of ``partition`` found."""
        self._offsets[partition] = offsets

    def appended(
        self,
        partition: int,
        records: Sequence[ShareStateRecord | ShareStateTombstone],
        last_offset: int,
    ) -> None:
        """``records`` were appended to ``partition`` as one batch ending at ``last_offset``;
        deletes the redundant prefix when it is long enough."""
        offsets = self._offsets.setdefault(partition, SnapshotOffsets())
        first = last_offset - len(records) + 1
        for i, record in enumerate(records):
            offsets.note(record, first + i)
        self._maybe_prune(partition, offsets.redundant_offset())

    def _maybe_prune(self, partition: int, redundant: int) -> None:
        if partition in self._running:
            return
        plog = self._partition_log(partition)
        if redundant - plog.log_start_offset < self.min_records:
            return
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, plog.delete_records_before, redundant)
        self._running[partition] = fut

        def done(f: asyncio.Future[int]) -> None:
            self._running.pop(partition, None)
            if not f.cancelled() and f.exception() is not None:
                log.warning("pruning %s failed: %s", plog, f.exception())

        fut.add_done_callback(done)

    async def drain(self) -> None:
        """Wait for the deletions in progress (tests, shutdown)."""
        running = list(self._running.values())
        if running:
            await asyncio.wait(running)
