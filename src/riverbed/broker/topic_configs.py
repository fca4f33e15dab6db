"""Topic and broker configs as Kafka describes them: values, sources, synonyms, types.

A topic's explicit overrides are split in two: keys the storage layer implements
(:class:`~riverbed.storage.LogConfig`: ``retention.ms``, ``segment.bytes``,
``cleanup.policy`` ...) and keys Kafka accepts that have no effect on a single node
(``min.insync.replicas``, ``compression.type`` — batches are stored as produced —
``unclean.leader.election.enable`` ...), which are validated, stored and described only.

Describe follows Kafka's precedence and synonym order: a topic override
(DYNAMIC_TOPIC_CONFIG) beats the broker's static setting (STATIC_BROKER_CONFIG, under the
broker-level name such as ``log.retention.ms``), which beats the default (DEFAULT_CONFIG).

Segment size, as Kafka 4.x: a *request* (CreateTopics, AlterConfigs,
IncrementalAlterConfigs: :func:`check_requested`) setting ``segment.bytes`` below 1048576 is
INVALID_CONFIG "Invalid value N for configuration segment.bytes: Value must be at least
1048576"; the internal topic config ``internal.segment.bytes`` (Kafka's, "for testing
only") sets any size (Riverbed's storage floor is 14 bytes) and wins over
``segment.bytes``.  It is described only where a topic sets it, and ``segment.bytes`` is
then still described as set or defaulted.  Overrides already stored (a data dir from an
older Riverbed with ``segment.bytes=200``) still load and apply.
Pure functions; no state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from riverbed.broker.config import TOPIC_SYNONYMS, BrokerConfig
from riverbed.errors import ConfigError
from riverbed.storage.config import LogConfig

if TYPE_CHECKING:
    from riverbed.broker.topics import Topic

# DescribeConfigs config_source values (Kafka's ConfigSource).
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
# DescribeConfigs config_type values (Kafka's ConfigType).
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7

_BROKER_NAME = {topic: broker for broker, topic in TOPIC_SYNONYMS.items()}
_BROKER_NAME["max.message.bytes"] = "message.max.bytes"

STORAGE_KEYS: frozenset[str] = frozenset(LogConfig().to_kafka_props())
_STORAGE_TYPES = {"cleanup.policy": LIST, "message.timestamp.type": STRING}
_INT_KEYS = {"max.message.bytes", "index.interval.bytes", "segment.bytes"}
SEGMENT_BYTES, INTERNAL_SEGMENT_BYTES = "segment.bytes", "internal.segment.bytes"
MIN_SEGMENT_BYTES = 1 << 20
"""Kafka 4.x's floor for ``segment.bytes`` set by a request (LogConfig's atLeast(1 MiB))."""


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda v: v in choices


def _is_int(minimum: int) -> Callable[[str], bool]:
    def check(v: str) -> bool:
        try:
            return int(v) >= minimum
        except ValueError:
            return False

    return check


def _is_ratio(v: str) -> bool:
    try:
        return 0.0 <= float(v) <= 1.0
    except ValueError:
        return False


_BOOL = _one_of("true", "false")


@dataclass(frozen=True, slots=True)
class _Extra:
    default: str
    valid: Callable[[str], bool]
    config_type: int


# Accepted, validated, stored and described; no effect on a single-node broker.
EXTRA_TOPIC_CONFIGS: Mapping[str, _Extra] = {
    "compression.type": _Extra(
        "producer", _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), STRING
    ),
    "min.insync.replicas": _Extra("1", _is_int(1), INT),
    "unclean.leader.election.enable": _Extra("false", _BOOL, BOOLEAN),
    "message.downconversion.enable": _Extra("true", _BOOL, BOOLEAN),
    "preallocate": _Extra("false", _BOOL, BOOLEAN),
    "segment.jitter.ms": _Extra("0", _is_int(0), LONG),
    "segment.index.bytes": _Extra("10485760", _is_int(4), INT),
    "remote.storage.enable": _Extra("false", _one_of("false"), BOOLEAN),
    "local.retention.ms": _Extra("-2", _is_int(-2), LONG),
    "local.retention.bytes": _Extra("-2", _is_int(-2), LONG),
    # KIP-1191: a share group may copy dead letters here (riverbed.broker.share_dead_letters)
    "errors.deadletterqueue.group.enable": _Extra("false", _BOOL, BOOLEAN),
}


def storage_props(props: Mapping[str, str]) -> dict[str, str]:
    """Validate every key of ``props``; return the ones the storage layer implements.

    ConfigError names the first unknown key or bad value of an extra key (the storage
    layer's :meth:`LogConfig.from_kafka_props` checks the values of its own keys).
    """
    out: dict[str, str] = {}
    for key, value in props.items():
        if key in STORAGE_KEYS:
            out.setdefault(key, value)
            continue
        if key == INTERNAL_SEGMENT_BYTES:  # the storage layer's segment size: it wins
            out[SEGMENT_BYTES] = value
            continue
        extra = EXTRA_TOPIC_CONFIGS.get(key)
        if extra is None:
            raise ConfigError(f"unknown topic config {key!r}")
        if not extra.valid(value):
            raise ConfigError(f"invalid value {value!r} for {key}")
    return out


def check_requested(props: Mapping[str, str]) -> None:
    """The checks Kafka 4.x makes on topic configs a request sets, beyond
    :func:`storage_props` (which also loads stored overrides): ``segment.bytes`` at least
    1 MiB (ConfigError with Kafka's words; ``internal.segment.bytes`` is the way to small
    segments)."""
    raw = props.get(SEGMENT_BYTES)
    if raw is None:
        return
    try:
        value = int(raw.strip())
    except ValueError:
        return  # LogConfig names the bad value
    if value < MIN_SEGMENT_BYTES:
        raise ConfigError(
            f"Invalid value {value} for configuration {SEGMENT_BYTES}: "
            f"Value must be at least {MIN_SEGMENT_BYTES}"
        )


class ConfigTopics(Protocol):
    """The topic table's config side (:class:`~riverbed.broker.topics.TopicManager`)."""

    @property
    def default_log_config(self) -> LogConfig: ...

    def log_config(self, overrides: Mapping[str, str]) -> LogConfig: ...

    def get(self, name: str) -> Topic | None: ...


class ConfigView(Protocol):
    """What describing configs reads: the broker's settings and the topic table (the
    :class:`~riverbed.broker.server.Broker` satisfies it)."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def node_id(self) -> int: ...

    @property
    def topics(self) -> ConfigTopics: ...


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One described config: value, source and synonyms (most specific first)."""

    name: str
    value: str | None
    source: int
    read_only: bool
    config_type: int
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG


def _topic_type(name: str) -> int:
    if name == INTERNAL_SEGMENT_BYTES:
        return INT
    if name in _STORAGE_TYPES:
        return _STORAGE_TYPES[name]
    if name in EXTRA_TOPIC_CONFIGS:
        return EXTRA_TOPIC_CONFIGS[name].config_type
    return INT if name in _INT_KEYS else LONG


def describe_topic_configs(broker: ConfigView, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every topic config with its effective value, source and synonyms."""
    config = broker.config
    internal = overrides.get(INTERNAL_SEGMENT_BYTES)
    public = {k: v for k, v in overrides.items() if k != INTERNAL_SEGMENT_BYTES}
    effective = broker.topics.log_config(public).to_kafka_props()
    if internal is not None:  # described only where set, beside segment.bytes
        effective[INTERNAL_SEGMENT_BYTES] = internal
    defaults = LogConfig().to_kafka_props()
    for name, extra in EXTRA_TOPIC_CONFIGS.items():
        defaults[name] = extra.default
        effective[name] = overrides.get(name, config.topic_defaults.get(name, extra.default))
    entries = []
    for name in sorted(effective):
        broker_name = _BROKER_NAME.get(name, name)
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        if name in config.topic_defaults:
            synonyms.append((broker_name, config.topic_defaults[name], STATIC_BROKER_CONFIG))
        if name != INTERNAL_SEGMENT_BYTES:  # Kafka lists no default for it
            synonyms.append((broker_name, defaults.get(name), DEFAULT_CONFIG))
        entries.append(
            ConfigEntry(
                name=name,
                value=effective[name],
                source=synonyms[0][2],
                read_only=False,
                config_type=_topic_type(name),
                synonyms=synonyms,
            )
        )
    return entries


_BROKER_SETTINGS: dict[str, tuple[Callable[[BrokerConfig], str], int]] = {
    "node.id": (lambda c: str(c.node_id), INT),
    "num.partitions": (lambda c: str(c.num_partitions), INT),
    "auto.create.topics.enable": (lambda c: str(c.auto_create_topics_enable).lower(), BOOLEAN),
    "delete.topic.enable": (lambda c: str(c.delete_topic_enable).lower(), BOOLEAN),
    "message.max.bytes": (lambda c: str(c.message_max_bytes), INT),
    "socket.request.max.bytes": (lambda c: str(c.socket_request_max_bytes), INT),
    "max.broker.partitions": (lambda c: str(c.max_broker_partitions), INT),
}


def describe_broker_configs(broker: ConfigView) -> list[ConfigEntry]:
    """The broker's settings (static: read from flags or server.properties at start)."""
    config = broker.config
    default = BrokerConfig()
    entries = []
    for name, (get, config_type) in _BROKER_SETTINGS.items():
        static = name in config.source or (name == "node.id" and "broker.id" in config.source)
        synonyms: list[tuple[str, str | None, int]] = []
        if static:
            synonyms.append((name, get(config), STATIC_BROKER_CONFIG))
        synonyms.append((name, get(default), DEFAULT_CONFIG))
        entries.append(ConfigEntry(name, get(config), synonyms[0][2], True, config_type, synonyms))
    defaults = LogConfig().to_kafka_props()
    effective = broker.topics.default_log_config.to_kafka_props()
    for topic_name, broker_name in sorted(_BROKER_NAME.items(), key=lambda kv: kv[1]):
        if broker_name in _BROKER_SETTINGS or topic_name not in effective:
            continue
        static = topic_name in config.topic_defaults
        synonyms = []
        if static:
            synonyms.append((broker_name, effective[topic_name], STATIC_BROKER_CONFIG))
        synonyms.append((broker_name, defaults[topic_name], DEFAULT_CONFIG))
        entries.append(
            ConfigEntry(
                broker_name,
                effective[topic_name],
                synonyms[0][2],
                True,
                _topic_type(topic_name),
                synonyms,
            )
        )
    return entries
