"""Share group settings (KIP-932), named after Kafka's broker configs (``_ms`` = millis).

Membership (:mod:`riverbed.coordinator.share_group`) uses the session timeout and the
heartbeat interval; the broker's share partitions (:mod:`riverbed.broker.share_groups`)
use the lock duration, the delivery count limit and the in-flight record limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from riverbed.coordinator.config import CoordinatorConfigError


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    share_group_session_timeout_ms: int = 45_000
    """``group.share.session.timeout.ms``: a member silent this long is removed and the
    records it holds are released."""
    share_group_heartbeat_interval_ms: int = 5_000
    """``group.share.heartbeat.interval.ms``."""
    record_lock_duration_ms: int = 30_000
    """``group.share.record.lock.duration.ms``: how long an acquired record stays locked
    to its consumer before it is released (and redelivered)."""
    delivery_count_limit: int = 5
    """``group.share.delivery.count.limit``: deliveries before a record is archived."""
    partition_max_record_locks: int = 2_000
    """``group.share.partition.max.record.locks``: acquired records per share partition."""


_KEYS: dict[str, tuple[str, int]] = {
    # Kafka broker key -> (field, minimum)
    "group.share.session.timeout.ms": ("share_group_session_timeout_ms", 1),
    "group.share.heartbeat.interval.ms": ("share_group_heartbeat_interval_ms", 1),
    "group.share.record.lock.duration.ms": ("record_lock_duration_ms", 1),
    "group.share.delivery.count.limit": ("delivery_count_limit", 1),
    "group.share.partition.max.record.locks": ("partition_max_record_locks", 1),
}
_ACCEPTED = frozenset(
    {
        # Kafka settings accepted and not needed by one node: the bounds the per-group
        # configs are checked against, the share coordinator's topic layout.
        "group.share.enable",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
        "group.share.max.size",
        "group.share.max.groups",
        "group.share.min.delivery.count.limit",
        "group.share.max.delivery.count.limit",
        "group.share.assignors",
        "share.coordinator.state.topic.num.partitions",
        "share.coordinator.state.topic.segment.bytes",
        "share.coordinator.snapshot.update.records.per.snapshot",
        "share.coordinator.append.linger.ms",
        "share.coordinator.cold.partition.snapshot.interval.ms",
    }
)
SHARE_GROUP_KEYS: frozenset[str] = frozenset(_KEYS) | _ACCEPTED
"""Broker settings (Kafka's names) that configure share groups."""


def share_config_from_props(props: Mapping[str, str]) -> ShareGroupConfig:
    """Build from Kafka-named broker settings; other keys are ignored.  Raises
    :class:`~riverbed.coordinator.config.CoordinatorConfigError` naming a bad key."""
    values: dict[str, int] = {}
    for raw_key, raw_value in props.items():
        key, value = raw_key.strip(), str(raw_value).strip()
        if key not in _KEYS:
            continue
        name, minimum = _KEYS[key]
        try:
            number = int(value)
        except ValueError:
            raise CoordinatorConfigError(f"setting {key!r}: {value!r} is not an integer") from None
        if number < minimum:
            raise CoordinatorConfigError(f"setting {key!r}: {number} is out of range")
        values[name] = number
    return ShareGroupConfig(**values)
