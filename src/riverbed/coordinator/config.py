"""Group coordinator settings, named after Kafka's broker configs (``_ms`` = milliseconds)."""

from __future__ import annotations

from collections.abc import Mapping
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


# -- broker settings -------------------------------------------------------------------

_MS_KEYS: dict[str, tuple[str, int]] = {
    # Kafka broker key -> (field, unit in ms)
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", 1),
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", 1),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", 1),
    "group.max.size": ("group_max_size", 1),
    "offsets.retention.minutes": ("offsets_retention_ms", 60_000),
    "offsets.retention.check.interval.ms": ("offsets_retention_check_interval_ms", 1),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", 1),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", 1),
    "group.consumer.session.timeout.ms": ("consumer_group_session_timeout_ms", 1),
    "group.consumer.heartbeat.interval.ms": ("consumer_group_heartbeat_interval_ms", 1),
}
_ASSIGNORS_KEY = "group.consumer.assignors"
_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
    "org.apache.kafka.coordinator.group.api.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.api.assignor.RangeAssignor": "range",
}
COORDINATOR_KEYS: frozenset[str] = frozenset(_MS_KEYS) | {_ASSIGNORS_KEY}
"""Broker settings (Kafka's names) that configure the group coordinator."""


class CoordinatorConfigError(ValueError):
    """A coordinator setting that does not parse (the broker's config maps it to
    :class:`riverbed.errors.ConfigError`)."""


def coordinator_config_from_props(props: Mapping[str, str]) -> GroupCoordinatorConfig:
    """Build from Kafka-named broker settings; keys outside :data:`COORDINATOR_KEYS` are
    ignored.  Raises :class:`CoordinatorConfigError` naming the bad key."""
    values: dict[str, object] = {}
    for raw_key, raw_value in props.items():
        key, value = raw_key.strip(), str(raw_value).strip()
        if key in _MS_KEYS:
            name, unit = _MS_KEYS[key]
            try:
                number = int(value)
            except ValueError:
                raise CoordinatorConfigError(
                    f"setting {key!r}: {value!r} is not an integer"
                ) from None
            if number < 0 or (number == 0 and key == "offsets.topic.num.partitions"):
                raise CoordinatorConfigError(f"setting {key!r}: {number} is out of range")
            values[name] = number * unit
        elif key == _ASSIGNORS_KEY:
            names = tuple(
                _ASSIGNOR_CLASSES.get(n.strip(), n.strip()) for n in value.split(",") if n.strip()
            )
            unknown = [n for n in names if n not in ("uniform", "range")]
            if not names or unknown:
                raise CoordinatorConfigError(
                    f"setting {key!r}: unknown assignor(s) {unknown or value!r}"
                )
            values["consumer_group_assignors"] = names
    return GroupCoordinatorConfig(**values)  # type: ignore[arg-type]
