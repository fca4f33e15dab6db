"""Gauges read from broker state at scrape time: partition offsets, log sizes, group lag.

:class:`BrokerStateCollector` is a prometheus-client custom collector; ``collect()`` runs
on the metrics HTTP thread for every scrape and computes, from memory only (no disk I/O):

* per partition (``topic``, ``partition``): ``riverbed_partition_log_start_offset``,
  ``riverbed_partition_high_watermark``, ``riverbed_partition_last_stable_offset`` and
  ``riverbed_partition_log_size_bytes`` -- read from the
  :class:`~riverbed.storage.log.PartitionLog` objects, whose properties are thread-safe
  (each takes the log's lock for a moment; sizes are the segments' in-memory sizes);
* per committed offset (``group``, ``topic``, ``partition``):
  ``riverbed_consumer_group_committed_offset`` and ``riverbed_consumer_group_lag`` (high
  watermark minus committed offset, never below 0).  Committed offsets live in the group
  coordinator, which only the event loop may touch: :func:`ask_loop` runs a copy of them
  *on the loop* (one short callback; the scrape thread waits, the loop never does) and
  gives up after ``timeout_s``, in which case the scrape carries no lag series and
  ``riverbed_scrape_state_errors_total`` counts it.

Never call ``collect()`` on the event loop thread: it would wait on itself until the
timeout.  A scrape during start-up or shutdown sees whatever is open (possibly nothing).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from riverbed.coordinator import GroupCoordinator

log = logging.getLogger(__name__)

T = TypeVar("T")

TopicPartition = tuple[str, int]
CommittedOffsets = Mapping[str, Mapping[TopicPartition, int]]
"""group -> (topic, partition) -> committed offset."""


class PartitionState(Protocol):
    """What the collector reads of a partition log (PartitionLog satisfies it)."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    @property
    def size_bytes(self) -> int: ...


def ask_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], T], timeout_s: float) -> T | None:
    """Run ``fn`` on ``loop`` from another thread and return its result, or None if the
    loop is closed, ``fn`` raised, or no answer came within ``timeout_s``."""
    fut: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return  # the scrape gave up already
        try:
            fut.set_result(fn())
        except BaseException as exc:
            fut.set_exception(exc)

    try:
        loop.call_soon_threadsafe(run)
    except RuntimeError:  # the loop is closed
        return None
    try:
        return fut.result(timeout_s)
    except concurrent.futures.TimeoutError:
        fut.cancel()
        return None
    except Exception:
        log.debug("reading broker state for a scrape failed", exc_info=True)
        return None


class BrokerStateCollector(Collector):
    """Partition and consumer-group gauges computed per scrape (see the module docstring)."""

    def __init__(
        self,
        logs: Callable[[], Mapping[TopicPartition, PartitionState]],
        committed_offsets: Callable[[], CommittedOffsets | None],
    ) -> None:
        """``logs``: thread-safe, returns the open partition logs; ``committed_offsets``:
        callable from the scrape thread (e.g. through :func:`ask_loop`), None if unknown."""
        self._logs = logs
        self._committed_offsets = committed_offsets
        self._state_errors = 0

    def describe(self) -> Iterable[Metric]:
        return []  # computed per scrape; nothing to check at registration

    def collect(self) -> Iterable[Metric]:
        labels = ["topic", "partition"]
        start = GaugeMetricFamily(
            "riverbed_partition_log_start_offset",
            "First offset still in the partition's log.",
            labels=labels,
        )
        hw = GaugeMetricFamily(
            "riverbed_partition_high_watermark",
            "Offset the next appended record gets (single node: the log end offset).",
            labels=labels,
        )
        lso = GaugeMetricFamily(
            "riverbed_partition_last_stable_offset",
            "First offset of the oldest open transaction, else the high watermark.",
            labels=labels,
        )
        size = GaugeMetricFamily(
            "riverbed_partition_log_size_bytes",
            "Bytes in the partition's segment files.",
            labels=labels,
        )
        high_watermarks: dict[TopicPartition, int] = {}
        for (topic, partition), plog in sorted(self._logs().items()):
            values = [topic, str(partition)]
            try:
                start.add_metric(values, plog.log_start_offset)
                high = plog.high_watermark
                hw.add_metric(values, high)
                lso.add_metric(values, plog.last_stable_offset)
                size.add_metric(values, plog.size_bytes)
            except Exception:  # closed or deleted while we read it
                continue
            high_watermarks[(topic, partition)] = high
        yield from (start, hw, lso, size)
        yield from self._group_metrics(high_watermarks)

    def _group_metrics(self, high_watermarks: Mapping[TopicPartition, int]) -> Iterable[Metric]:
        labels = ["group", "topic", "partition"]
        committed = GaugeMetricFamily(
            "riverbed_consumer_group_committed_offset",
            "Offset a consumer group committed for a partition.",
            labels=labels,
        )
        lag = GaugeMetricFamily(
            "riverbed_consumer_group_lag",
            "High watermark minus the group's committed offset (records not yet consumed).",
            labels=labels,
        )
        offsets = self._committed_offsets()
        if offsets is None:
            self._state_errors += 1
        else:
            for group, by_partition in sorted(offsets.items()):
                for (topic, partition), offset in sorted(by_partition.items()):
                    high = high_watermarks.get((topic, partition))
                    if high is None:
                        continue  # the topic is gone
                    values = [group, topic, str(partition)]
                    committed.add_metric(values, offset)
                    lag.add_metric(values, max(high - offset, 0))
        errors = CounterMetricFamily(
            "riverbed_scrape_state_errors",
            "Scrapes that could not read the group coordinator's state in time.",
        )
        errors.add_metric([], self._state_errors)
        yield from (committed, lag, errors)


def committed_offsets(coordinator: GroupCoordinator) -> dict[str, dict[TopicPartition, int]]:
    """Every committed offset of ``coordinator`` (event loop only: pass it to :func:`ask_loop`)."""
    offsets = coordinator.snapshot()["offsets"]
    if not isinstance(offsets, dict):
        return {}
    return {group: {tp: o.offset for tp, o in by_tp.items()} for group, by_tp in offsets.items()}
