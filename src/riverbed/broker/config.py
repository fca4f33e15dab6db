"""Broker settings under Kafka's own config names, from flags or a ``server.properties`` file.

A broker is configured by a flat ``dict[str, str]`` of Kafka keys, exactly like Kafka's
``server.properties``:

* **broker keys** (``node.id``, ``num.partitions``, ``auto.create.topics.enable``,
  ``message.max.bytes``, ``socket.request.max.bytes``, ...) are parsed into
  :class:`BrokerConfig` fields;
* **topic defaults** may be given under the topic name (``retention.ms``,
  ``segment.bytes``, ``cleanup.policy``, ``max.message.bytes``, ...) or under Kafka's
  broker-level synonym (``log.retention.ms``, ``log.segment.bytes``,
  ``log.cleanup.policy``, ``message.max.bytes``, ...); both end up, under the *topic*
  name, in :attr:`BrokerConfig.topic_defaults`, which is the base every topic's
  :class:`~riverbed.storage.LogConfig` is built on;
* Kafka keys that make no sense for a single-node broker (``zookeeper.connect``,
  ``process.roles``, ...) are accepted and ignored so a stock ``server.properties`` loads.

Anything else, or a value that does not parse, raises :class:`~riverbed.errors.ConfigError`
whose one-line message names the key.  Values are immutable once built; the broker keeps
dynamic (AlterConfigs) overrides separately.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from riverbed.broker.group_configs import BROKER_KEYS as GROUP_CONFIG_BROKER_KEYS
from riverbed.broker.metrics_endpoint import METRICS_KEYS, metrics_listen
from riverbed.broker.quotas import QUOTA_KEYS
from riverbed.broker.security.authorizer import AUTHORIZER_KEYS
from riverbed.broker.security.listeners import Listener, parse_listeners
from riverbed.broker.security.sasl import sasl_settings
from riverbed.coordinator.config import (
    COORDINATOR_KEYS,
    CoordinatorConfigError,
    coordinator_config_from_props,
)
from riverbed.coordinator.share_config import SHARE_GROUP_KEYS, share_config_from_props
from riverbed.coordinator.transactions.transaction_config import (
    TRANSACTION_COORDINATOR_KEYS,
    transaction_config_from_props,
)
from riverbed.errors import ConfigError
from riverbed.storage.config import DEFAULT_RETENTION_CHECK_INTERVAL_MS
from riverbed.storage.preallocate import (
    DEFAULT_BUDGET_BYTES,
    DEFAULT_WINDOW_BYTES,
    MAX_WINDOW_BYTES,
)

# Broker-level synonym -> topic-level name (Kafka's LogConfig "server default property").
# ms variants win over hours/minutes when both are present, as in Kafka.
TOPIC_SYNONYMS: Mapping[str, str] = MappingProxyType(
    {
        "log.cleanup.policy": "cleanup.policy",
        "log.retention.ms": "retention.ms",
        "log.retention.bytes": "retention.bytes",
        "log.segment.bytes": "segment.bytes",
        "log.roll.ms": "segment.ms",
        "log.index.size.max.bytes": "segment.index.bytes",
        "log.index.interval.bytes": "index.interval.bytes",
        "log.flush.interval.messages": "flush.messages",
        "log.flush.interval.ms": "flush.ms",
        "log.segment.delete.delay.ms": "file.delete.delay.ms",
        "log.cleaner.delete.retention.ms": "delete.retention.ms",
        "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
        "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
        "log.message.timestamp.type": "message.timestamp.type",
        "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
        "log.preallocate": "preallocate",
        "message.max.bytes": "max.message.bytes",
        "compression.type": "compression.type",
        "min.insync.replicas": "min.insync.replicas",
        "unclean.leader.election.enable": "unclean.leader.election.enable",
    }
)
_HOUR_MS = 3_600_000
_COARSE_SYNONYMS: Mapping[str, tuple[str, int]] = MappingProxyType(
    {
        "log.retention.hours": ("retention.ms", _HOUR_MS),
        "log.retention.minutes": ("retention.ms", 60_000),
        "log.roll.hours": ("segment.ms", _HOUR_MS),
    }
)
# Topic-level names accepted as defaults (the storage layer validates their values).
TOPIC_KEYS: frozenset[str] = frozenset(TOPIC_SYNONYMS.values()) | {
    "retention.ms",
    "segment.jitter.ms",
    "message.downconversion.enable",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "local.retention.ms",
    "local.retention.bytes",
    "remote.storage.enable",
}
# Kafka keys a single-node broker accepts and ignores (so a stock server.properties loads).
IGNORED_KEYS: frozenset[str] = frozenset(
    {
        "broker.id.generation.enable",
        "controller.listener.names",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "default.replication.factor",
        "inter.broker.listener.name",
        "log.dirs",
        "log.dir",
        "num.io.threads",
        "num.network.threads",
        "num.recovery.threads.per.data.dir",
        "offsets.topic.replication.factor",
        "process.roles",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "socket.receive.buffer.bytes",
        "socket.send.buffer.bytes",
        "transaction.state.log.min.isr",
        "transaction.state.log.replication.factor",
        "zookeeper.connect",
        "zookeeper.connection.timeout.ms",
        "security.inter.broker.protocol",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.mechanism.controller.protocol",
    }
)
# Security settings (validated where they are used, riverbed.broker.security): every
# ssl.* and sasl.* key, per-listener ``listener.name.<l>.*`` overrides and these.
LISTENER_KEYS: frozenset[str] = frozenset(
    {
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "connections.max.reauth.ms",
    }
)
_SECURITY_PREFIXES = ("ssl.", "sasl.", "listener.name.")

DEFAULT_MESSAGE_MAX_BYTES = 1_048_588
DEFAULT_SOCKET_REQUEST_MAX_BYTES = 104_857_600
DEFAULT_MAX_BROKER_PARTITIONS = 10_000  # max.broker.partitions; see docs/broker.md
DEFAULT_QUEUED_MAX_REQUEST_BYTES = 104_857_600  # Kafka: -1 (unlimited); see docs/broker.md
DEFAULT_FETCH_MAX_BYTES = 57_671_680  # Kafka's broker fetch.max.bytes (55 MiB)
DEFAULT_MAX_QUEUED_RESPONSE_BYTES = 33_554_432  # per connection; riverbed's own key
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 600_000  # Kafka's default (10 minutes)
UNLIMITED = 2_147_483_647  # Kafka's Int.MaxValue default for the connection caps


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Parsed broker settings (Kafka names in the comments)."""

    node_id: int = 1  # node.id / broker.id
    num_partitions: int = 1  # num.partitions
    auto_create_topics_enable: bool = True  # auto.create.topics.enable
    delete_topic_enable: bool = True  # delete.topic.enable
    socket_request_max_bytes: int = DEFAULT_SOCKET_REQUEST_MAX_BYTES  # socket.request.max.bytes
    message_max_bytes: int = DEFAULT_MESSAGE_MAX_BYTES  # message.max.bytes
    advertised_host: str | None = None  # advertised.host.name (None: the bound host)
    max_in_flight_requests_per_connection: int = 100  # riverbed: pipelining window
    max_broker_partitions: int = DEFAULT_MAX_BROKER_PARTITIONS  # max.broker.partitions
    queued_max_request_bytes: int = DEFAULT_QUEUED_MAX_REQUEST_BYTES  # queued.max.request.bytes
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES  # fetch.max.bytes (broker side)
    # riverbed.max.queued.response.bytes.per.connection
    max_queued_response_bytes: int = DEFAULT_MAX_QUEUED_RESPONSE_BYTES
    # riverbed.log.zero.window.bytes: pre-zeroed space ahead of small-fsync logs' ends
    # (riverbed.storage.preallocate; 0 = off), applied process-wide by ``riverbed broker``
    zero_window_bytes: int = DEFAULT_WINDOW_BYTES
    # riverbed.log.zero.window.total.bytes: the zeros all logs may hold together
    zero_window_total_bytes: int = DEFAULT_BUDGET_BYTES
    # riverbed.log.flush.io.uring: acknowledgement fsyncs submitted through io_uring and
    # completed on the event loop (riverbed.storage.uring), where the kernel allows a ring
    flush_io_uring: bool = True
    max_connections: int = UNLIMITED  # max.connections (also capped by the open-file limit)
    max_connections_per_ip: int = UNLIMITED  # max.connections.per.ip
    connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS  # connections.max.idle.ms
    # log.retention.check.interval.ms: how often expired segments are deleted
    log_retention_check_interval_ms: int = DEFAULT_RETENTION_CHECK_INTERVAL_MS
    # listeners / advertised.listeners / listener.security.protocol.map; empty: one
    # PLAINTEXT listener on the address the broker is given (``--listen``)
    listeners: tuple[Listener, ...] = ()
    topic_defaults: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    source: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Build from Kafka-named settings; ConfigError names the first bad key."""
        values: dict[str, object] = {}
        topic: dict[str, str] = {}
        coarse: dict[str, str] = {}
        for raw_key, raw_value in props.items():
            key = raw_key.strip()
            value = str(raw_value).strip()
            if key in ("node.id", "broker.id"):
                values["node_id"] = _int(key, value, minimum=0)
            elif key == "num.partitions":
                values["num_partitions"] = _int(key, value, minimum=1)
            elif key == "auto.create.topics.enable":
                values["auto_create_topics_enable"] = _bool(key, value)
            elif key == "delete.topic.enable":
                values["delete_topic_enable"] = _bool(key, value)
            elif key == "socket.request.max.bytes":
                values["socket_request_max_bytes"] = _int(key, value, minimum=1)
            elif key == "advertised.host.name":
                values["advertised_host"] = value or None
            elif key == "riverbed.max.in.flight.requests.per.connection":
                values["max_in_flight_requests_per_connection"] = _int(key, value, minimum=1)
            elif key == "max.broker.partitions":
                values["max_broker_partitions"] = _int(key, value, minimum=1)
            elif key == "queued.max.request.bytes":
                values["queued_max_request_bytes"] = _int(key, value, minimum=-1)
            elif key == "fetch.max.bytes":
                values["fetch_max_bytes"] = _int(key, value, minimum=1024)
            elif key == "riverbed.max.queued.response.bytes.per.connection":
                values["max_queued_response_bytes"] = _int(key, value, minimum=1)
            elif key == "riverbed.log.zero.window.bytes":
                values["zero_window_bytes"] = _int(key, value, minimum=0, maximum=MAX_WINDOW_BYTES)
            elif key == "riverbed.log.zero.window.total.bytes":
                values["zero_window_total_bytes"] = _int(key, value, minimum=0)
            elif key == "riverbed.log.flush.io.uring":
                values["flush_io_uring"] = _bool(key, value)
            elif key == "max.connections":
                values["max_connections"] = _int(key, value, minimum=1)
            elif key == "max.connections.per.ip":
                values["max_connections_per_ip"] = _int(key, value, minimum=1)
            elif key == "connections.max.idle.ms":
                values["connections_max_idle_ms"] = _int(key, value, minimum=-1)
            elif key == "log.retention.check.interval.ms":
                values["log_retention_check_interval_ms"] = _int(key, value, minimum=1)
            elif key == "message.max.bytes":
                values["message_max_bytes"] = _int(key, value, minimum=0)
                topic.setdefault("max.message.bytes", value)
            elif key in _COARSE_SYNONYMS:
                coarse[key] = value
            elif key in TOPIC_SYNONYMS:
                if key == "log.segment.bytes":  # Kafka 4.x: at least 1 MiB
                    _int(key, value, minimum=1 << 20)
                topic[TOPIC_SYNONYMS[key]] = value
            elif key in TOPIC_KEYS:
                topic[key] = value
            elif key in LISTENER_KEYS or key.startswith(_SECURITY_PREFIXES):
                continue  # riverbed.broker.security parses these
            elif key in AUTHORIZER_KEYS:
                continue  # riverbed.broker.security.authorizer parses these
            elif key in METRICS_KEYS:
                metrics_listen(props)  # metrics.listen: a one-line ConfigError now
            elif (
                key in IGNORED_KEYS
                or key in COORDINATOR_KEYS
                or key in QUOTA_KEYS
                or key in TRANSACTION_COORDINATOR_KEYS
                or key in SHARE_GROUP_KEYS
                or key in GROUP_CONFIG_BROKER_KEYS
            ):
                continue  # parsed by riverbed.coordinator.config, riverbed.broker.quotas
            else:
                raise ConfigError(f"unknown broker setting {key!r}")
        for key, value in coarse.items():
            name, unit = _COARSE_SYNONYMS[key]
            topic.setdefault(name, str(_int(key, value, minimum=-1) * unit))
        listeners = parse_listeners(props)
        for listener in listeners:
            if listener.protocol.uses_sasl:
                sasl_settings(props, listener.name)  # one-line ConfigError now, not at start
        values["listeners"] = tuple(listeners)
        try:
            coordinator_config_from_props(props)
            transaction_config_from_props(props)
            share_config_from_props(props)
        except CoordinatorConfigError as exc:
            raise ConfigError(str(exc)) from None
        values["topic_defaults"] = MappingProxyType(dict(topic))
        values["source"] = MappingProxyType({k.strip(): str(v) for k, v in props.items()})
        return cls(**values)  # type: ignore[arg-type]


def _int(key: str, value: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"setting {key!r}: {value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ConfigError(f"setting {key!r}: {number} is below the minimum {minimum}")
    if maximum is not None and number > maximum:
        raise ConfigError(f"setting {key!r}: {number} is above the maximum {maximum}")
    return number


def _bool(key: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ConfigError(f"setting {key!r}: {value!r} is not true or false")


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATOR = re.compile(r"(?<!\\)[=:\s]")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value``, ``key: value`` or ``key value``;
    ``#``/``!`` comments; a trailing backslash continues the line; ``\\uXXXX`` escapes."""
    result: dict[str, str] = {}
    logical: list[str] = []
    for physical in text.splitlines():
        line = physical.lstrip() if logical else physical.strip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        match = _SEPARATOR.search(entry)
        if match is None:
            key, value = entry, ""
        else:
            key = entry[: match.start()]
            rest = entry[match.end() :].lstrip()
            if match.group() not in "=:" and rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip()
            value = rest
        result[_unescape(key)] = _unescape(value)
    if logical:
        entry = "".join(logical)
        result[_unescape(entry)] = ""
    return result


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def load_properties(path: Path) -> dict[str, str]:
    """Read a ``server.properties`` file; ConfigError if it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc.strerror}") from None
    if b"\x00" in data:
        raise ConfigError(f"config file {str(path)!r} is binary, not a properties file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {str(path)!r} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start})"
        ) from None
    return parse_properties(text)


def parse_key_value(item: str) -> tuple[str, str]:
    """Parse one ``--config key=value`` flag."""
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--config expects key=value, got {item!r}")
    return key.strip(), value.strip()
