"""Per-topic log settings (:class:`LogConfig`) and how they map to Kafka's property names.

A :class:`LogConfig` is an immutable value; changing a topic's settings means building a
new one (``LogConfig.from_kafka_props(props, base)``) and handing it to
``LogManager.update_config``.  Property names and units are Kafka's own
(``segment.bytes``, ``retention.ms``, ``cleanup.policy`` ...).

Flush policy (see docs/storage.md for what survives a crash under each):

* ``PER_APPEND``  - ``flush.messages=1`` or ``flush.ms=0`` (Riverbed's default: a single
  node has no replicas, so an acknowledged write must be on disk).  Every append is
  covered by an fsync before the broker acknowledges it; concurrent appends share one
  fsync (group commit).
* ``INTERVAL``    - any other finite ``flush.messages`` / ``flush.ms``: the background
  flusher fsyncs once that many messages are unflushed or the oldest unflushed append is
  that old.  Acks do not wait for it.
* ``OS``          - both at Kafka's default ``Long.MAX_VALUE``: the page cache decides;
  Riverbed fsyncs only on segment roll, checkpoint and clean shutdown.

Defaults are Kafka 4's, including ``message.timestamp.after.max.ms`` = 1 hour (Kafka
4.0 changed it from ``Long.MAX_VALUE``; ``message.timestamp.before.max.ms`` stays
unbounded).  Broker-wide settings that are not topic properties
(``log.cleaner.dedupe.buffer.size``, ``producer.id.expiration.ms``) are arguments of
:class:`~riverbed.storage.manager.LogManager` instead.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from riverbed.errors import ConfigError

LONG_MAX = (1 << 63) - 1
DAY_MS = 86_400_000
DEFAULT_RETENTION_CHECK_INTERVAL_MS = 300_000
"""Kafka's default ``log.retention.check.interval.ms``: how often expired segments go
(the broker's maintenance thread, :class:`riverbed.storage.manager.LogManager`)."""
HOUR_MS = 3_600_000


class FlushPolicy(enum.Enum):
    PER_APPEND = "per-append"
    INTERVAL = "interval"
    OS = "os"


CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one topic's partition logs; defaults are Kafka's except the flush policy."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * DAY_MS
    retention_ms: int = 7 * DAY_MS
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    min_compaction_lag_ms: int = 0
    delete_retention_ms: int = DAY_MS
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = "CreateTime"
    flush_messages: int = 1
    flush_ms: int = LONG_MAX
    index_interval_bytes: int = 4096
    file_delete_delay_ms: int = 60_000
    min_cleanable_dirty_ratio: float = 0.5
    max_compaction_lag_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = HOUR_MS

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise ConfigError(f"segment.bytes must be >= 14, got {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ConfigError(f"segment.ms must be >= 1, got {self.segment_ms}")
        if self.retention_ms < -1 or self.retention_bytes < -1:
            raise ConfigError("retention.ms and retention.bytes must be >= -1")
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise ConfigError(f"cleanup.policy must be one of {CLEANUP_POLICIES}")
        if self.message_timestamp_type not in TIMESTAMP_TYPES:
            raise ConfigError(f"message.timestamp.type must be one of {TIMESTAMP_TYPES}")
        for name in (
            "min_compaction_lag_ms",
            "delete_retention_ms",
            "file_delete_delay_ms",
            "flush_ms",
            "index_interval_bytes",
            "message_timestamp_before_max_ms",
            "message_timestamp_after_max_ms",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name.replace('_', '.')} must be >= 0")
        if self.flush_messages < 1:
            raise ConfigError("flush.messages must be >= 1")
        if self.max_message_bytes < 0:
            raise ConfigError("max.message.bytes must be >= 0")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ConfigError("min.cleanable.dirty.ratio must be in [0, 1]")
        if self.max_compaction_lag_ms < 1:
            raise ConfigError("max.compaction.lag.ms must be >= 1")

    @property
    def max_segment_ms(self) -> int:
        """The age at which the active segment rolls: ``segment.ms``, lowered to
        ``max.compaction.lag.ms`` on compacted topics so a key's old values become
        cleanable in time (Kafka's ``LogConfig.maxSegmentMs``)."""
        if self.compact:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def flush_policy(self) -> FlushPolicy:
        if self.flush_messages == 1 or self.flush_ms == 0:
            return FlushPolicy.PER_APPEND
        if self.flush_messages < LONG_MAX or self.flush_ms < LONG_MAX:
            return FlushPolicy.INTERVAL
        return FlushPolicy.OS

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @classmethod
    def from_kafka_props(cls, props: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """``base`` with Kafka-named properties applied; ConfigError on bad name or value."""
        changes: dict[str, Any] = {}
        for name, raw in props.items():
            spec = _PROPS.get(name)
            if spec is None:
                raise ConfigError(f"unknown topic config {name!r}")
            attr, parse = spec
            try:
                changes[attr] = parse(raw)
            except ValueError as exc:
                raise ConfigError(f"invalid value {raw!r} for {name}: {exc}") from None
        return replace(base if base is not None else cls(), **changes)

    def to_kafka_props(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, (attr, _parse) in _PROPS.items():
            out[name] = str(getattr(self, attr))
        return out


def _int(raw: str) -> int:
    return int(raw.strip())


def _ratio(raw: str) -> float:
    value = float(raw.strip())
    if not 0.0 <= value <= 1.0:
        raise ValueError("expected a ratio in [0, 1]")
    return value


def _policy(raw: str) -> str:
    parts = sorted(p.strip() for p in raw.split(",") if p.strip())
    value = ",".join(parts)
    if value not in CLEANUP_POLICIES:
        raise ValueError(f"expected one of {CLEANUP_POLICIES}")
    return value


def _ts_type(raw: str) -> str:
    if raw not in TIMESTAMP_TYPES:
        raise ValueError(f"expected one of {TIMESTAMP_TYPES}")
    return raw


_PROPS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "segment.bytes": ("segment_bytes", _int),
    "segment.ms": ("segment_ms", _int),
    "retention.ms": ("retention_ms", _int),
    "retention.bytes": ("retention_bytes", _int),
    "cleanup.policy": ("cleanup_policy", _policy),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _int),
    "delete.retention.ms": ("delete_retention_ms", _int),
    "max.message.bytes": ("max_message_bytes", _int),
    "message.timestamp.type": ("message_timestamp_type", _ts_type),
    "flush.messages": ("flush_messages", _int),
    "flush.ms": ("flush_ms", _int),
    "index.interval.bytes": ("index_interval_bytes", _int),
    "file.delete.delay.ms": ("file_delete_delay_ms", _int),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _int),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", _int),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", _int),
}

assert {a for a, _ in _PROPS.values()} == {f.name for f in fields(LogConfig)}
