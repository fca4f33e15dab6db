"""Metrics for one broker, wired: the instruments, the state collector, the endpoint.

The broker calls :func:`broker_metrics` once when built (None unless ``metrics.listen``
is set) and :func:`start_metrics_endpoint` at start, right after binding its Kafka
listeners and before opening the data dir, so a metrics port in use fails the start
before anything is written.  The collector reads the log manager and the group service
through getters, so scrapes before the data dir is open (or after stop) see no partitions
rather than failing.  Event-loop thread for both calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from riverbed.broker.metrics_endpoint import MetricsEndpoint, metrics_listen
from riverbed.broker.metrics_traffic import TopicName

if TYPE_CHECKING:  # prometheus_client and the instruments: only with metrics.listen
    from riverbed.broker.groups import GroupService
    from riverbed.broker.metrics import BrokerMetrics
    from riverbed.broker.metrics_collector import (
        CommittedOffsets,
        PartitionState,
        TopicPartition,
    )
    from riverbed.storage.manager import LogManager

GROUP_STATE_TIMEOUT_S = 2.0
"""How long a scrape waits for the event loop to copy the committed offsets."""


def broker_metrics(props: Mapping[str, str], topic_name: TopicName) -> BrokerMetrics | None:
    """The broker's instruments, or None when ``metrics.listen`` is unset (ConfigError
    if it does not parse).  prometheus_client is imported only here, when it is set: a
    broker without metrics does not load it (a faster start)."""
    if metrics_listen(props) is None:
        return None
    from riverbed.broker.metrics import BrokerMetrics

    return BrokerMetrics(topic_name)


def start_metrics_endpoint(
    metrics: BrokerMetrics,
    props: Mapping[str, str],
    loop: asyncio.AbstractEventLoop,
    logs: Callable[[], LogManager | None],
    groups: Callable[[], GroupService | None],
) -> MetricsEndpoint:
    """Register the state collector and serve ``/metrics`` on ``metrics.listen``."""
    from riverbed.broker.metrics_collector import (
        BrokerStateCollector,
        ask_loop,
        committed_offsets,
    )

    address = metrics_listen(props)
    assert address is not None, "metrics.listen is not set"

    def partition_logs() -> Mapping[TopicPartition, PartitionState]:
        manager = logs()
        return manager.logs() if manager is not None else {}

    def read_offsets() -> CommittedOffsets:
        service = groups()
        return committed_offsets(service.coordinator) if service is not None else {}

    collector = BrokerStateCollector(
        partition_logs, lambda: ask_loop(loop, read_offsets, GROUP_STATE_TIMEOUT_S)
    )
    metrics.registry.register(collector)
    try:
        return MetricsEndpoint(metrics.registry, *address)
    except BaseException:
        metrics.registry.unregister(collector)
        raise
