"""Group coordinator settings, named after Kafka's broker configs (``_ms`` = milliseconds)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    group_initial_rebalance_delay_ms: int = 3_000
    """``group.initial.rebalance.delay.ms``: how long the first rebalance of an Empty group
    waits for more members (extended per new member, capped by the rebalance timeout)."""
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2**31 - 1
    group_new_member_join_timeout_ms: int = 300_000
    """How long a brand-new classic member may wait in a join before it is dropped."""
    offsets_retention_ms: int = 7 * 24 * 3_600_000
    """``offsets.retention.minutes`` (7 days) in ms: committed offsets of an Empty group expire
    this long after the group became Empty (or after the commit, for simple groups)."""
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    offsets_topic_num_partitions: int = 50
    consumer_group_session_timeout_ms: int = 45_000
    """``group.consumer.session.timeout.ms`` (KIP-848 groups)."""
    consumer_group_heartbeat_interval_ms: int = 5_000
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")
    """Server-side assignors; the first is the default (``group.consumer.assignors``)."""
