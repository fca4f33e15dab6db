"""GROUP resource configs (type 32) as Kafka 4.4's ``GroupConfig`` defines them: the keys,
their types and defaults, the checks IncrementalAlterConfigs makes and what
DescribeConfigs answers.  Pure functions; no state (the values live in the share group
service, ``share_group_configs.json``; :mod:`riverbed.broker.handlers.share_group_configs`
is the wire adapter).

The keys (:data:`KEYS`, in Kafka's definition order), each with the broker-level
setting its default comes from (its *synonym*, e.g. ``consumer.session.timeout.ms`` ->
``group.consumer.session.timeout.ms``; ``share.auto.offset.reset``,
``share.isolation.level``, ``share.renew.acknowledge.enable`` and the two
``errors.deadletterqueue.*`` keys have none).  Six are *internal* (the three
``*.assignor.offload.enable``, ``streams.task.offset.interval.ms``,
``streams.num.warmup.replicas``, ``streams.acceptable.recovery.lag``): accepted, and
described only once a group sets them, as Kafka does.

Effect in Riverbed: ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``
(KIP-848 members of the group: :meth:`riverbed.coordinator.context.CoordinatorContext.
session_timeout_ms`), ``share.session.timeout.ms`` / ``share.heartbeat.interval.ms``
(KIP-932 members: :meth:`riverbed.coordinator.share_group.ShareGroupManager.
session_timeout_ms`), ``share.record.lock.duration.ms``, ``share.delivery.count.limit``,
``share.partition.max.record.locks``, ``share.auto.offset.reset`` (``earliest`` /
``latest``; ``by_duration:`` is refused, see below), ``share.isolation.level`` and the
dead-letter keys (:mod:`riverbed.broker.share_partitions`).  The rest (assignment
intervals, assignor offload, ``share.renew.acknowledge.enable``, every ``streams.*``:
Riverbed has no KIP-1071 streams groups) are validated, stored and described without
effect (docs/compatibility.md).

Validation is Kafka's, in Kafka's order, on the group's configs *after* the change
(:func:`validate`): unknown names ("Unknown group config name: N"), duplicate rack tags,
then each key's type and ConfigDef bound ("Invalid value V for configuration N: Not a
number of type INT" / "...: Value must be at least M"), then the bounds the broker
settings give ("N must be in the range A to B inclusive.", "N must be less than or
equal to M", "N must be greater than or equal to M"), the streams assignor name, a
session timeout above the heartbeat interval and a dead-letter topic not starting with
``__``.  The broker bounds are read from the broker's settings (:data:`BROKER_KEYS`,
Kafka's names and defaults: ``group.consumer.min.session.timeout.ms`` 45000 ...).

The one deliberate difference: ``share.auto.offset.reset=by_duration:<ISO-8601>`` (valid in
Kafka) is refused INVALID_CONFIG, because Riverbed's share partitions start only at the
earliest or latest offset; accepting it would silently start at the latest.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from riverbed.errors import ConfigError

# DescribeConfigs config_type and config_source values (Kafka's ConfigType / ConfigSource)
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, GROUP_CONFIG = 4, 5, 8

_INT_MAX, _LONG_MAX = 2**31 - 1, 2**63 - 1
_TYPE_NAME = {INT: "INT", LONG: "LONG"}


@dataclass(frozen=True, slots=True)
class GroupKey:
    """One GROUP config: Kafka's type, default, ConfigDef lower bound and broker synonym."""

    name: str
    config_type: int
    default: str
    at_least: int | None = None
    synonym: str | None = None
    internal: bool = False


def _keys() -> dict[str, GroupKey]:
    g = "group."
    keys = [
        GroupKey("consumer.session.timeout.ms", INT, "45000", 1, g + "consumer.session.timeout.ms"),
        GroupKey(
            "consumer.heartbeat.interval.ms", INT, "5000", 1, g + "consumer.heartbeat.interval.ms"
        ),
        GroupKey(
            "consumer.assignment.interval.ms", INT, "1000", 0, g + "consumer.assignment.interval.ms"
        ),
        GroupKey(
            "consumer.assignor.offload.enable",
            BOOLEAN,
            "true",
            None,
            g + "consumer.assignor.offload.enable",
            True,
        ),
        GroupKey("share.session.timeout.ms", INT, "45000", 1, g + "share.session.timeout.ms"),
        GroupKey("share.heartbeat.interval.ms", INT, "5000", 1, g + "share.heartbeat.interval.ms"),
        GroupKey(
            "share.record.lock.duration.ms", INT, "30000", 1000, g + "share.record.lock.duration.ms"
        ),
        GroupKey("share.delivery.count.limit", INT, "5", 2, g + "share.delivery.count.limit"),
        GroupKey(
            "share.partition.max.record.locks",
            INT,
            "2000",
            100,
            g + "share.partition.max.record.locks",
        ),
        GroupKey("share.auto.offset.reset", STRING, "latest"),
        GroupKey("share.isolation.level", STRING, "read_uncommitted"),
        GroupKey("share.renew.acknowledge.enable", BOOLEAN, "true"),
        GroupKey(
            "share.assignment.interval.ms", INT, "1000", 0, g + "share.assignment.interval.ms"
        ),
        GroupKey(
            "share.assignor.offload.enable",
            BOOLEAN,
            "true",
            None,
            g + "share.assignor.offload.enable",
            True,
        ),
        GroupKey("streams.session.timeout.ms", INT, "45000", 1, g + "streams.session.timeout.ms"),
        GroupKey(
            "streams.heartbeat.interval.ms", INT, "5000", 1, g + "streams.heartbeat.interval.ms"
        ),
        GroupKey("streams.num.standby.replicas", INT, "0", 0, g + "streams.num.standby.replicas"),
        GroupKey(
            "streams.initial.rebalance.delay.ms",
            INT,
            "3000",
            0,
            g + "streams.initial.rebalance.delay.ms",
        ),
        GroupKey(
            "streams.assignment.interval.ms", INT, "1000", 0, g + "streams.assignment.interval.ms"
        ),
        GroupKey(
            "streams.assignor.offload.enable",
            BOOLEAN,
            "true",
            None,
            g + "streams.assignor.offload.enable",
            True,
        ),
        GroupKey(
            "streams.task.offset.interval.ms",
            INT,
            "60000",
            1,
            g + "streams.task.offset.interval.ms",
            True,
        ),
        GroupKey(
            "streams.num.warmup.replicas", INT, "2", 0, g + "streams.num.warmup.replicas", True
        ),
        GroupKey(
            "streams.rack.aware.assignment.tags",
            LIST,
            "",
            None,
            g + "streams.rack.aware.assignment.tags",
        ),
        GroupKey(
            "streams.acceptable.recovery.lag",
            LONG,
            "10000",
            0,
            g + "streams.acceptable.recovery.lag",
            True,
        ),
        GroupKey("streams.assignor.name", STRING, "sticky", None, g + "streams.assignors"),
        GroupKey("errors.deadletterqueue.topic.name", STRING, ""),
        GroupKey("errors.deadletterqueue.copy.record.enable", BOOLEAN, "false"),
    ]
    return {k.name: k for k in keys}


KEYS: dict[str, GroupKey] = _keys()
GROUP_CONFIG_KEYS: frozenset[str] = frozenset(KEYS)
"""Every GROUP config name Kafka 4.4 accepts."""

# validateValues' broker bounds, in Kafka's order: (key, kind, low setting, high setting)
_RANGE, _MAX, _MIN = "range", "max", "min"
_BOUNDS: list[tuple[str, str, tuple[str, int] | None, tuple[str, int] | None]] = [
    (
        "consumer.heartbeat.interval.ms",
        _RANGE,
        ("group.consumer.min.heartbeat.interval.ms", 5000),
        ("group.consumer.max.heartbeat.interval.ms", 15000),
    ),
    (
        "consumer.session.timeout.ms",
        _RANGE,
        ("group.consumer.min.session.timeout.ms", 45000),
        ("group.consumer.max.session.timeout.ms", 60000),
    ),
    (
        "consumer.assignment.interval.ms",
        _RANGE,
        ("group.consumer.min.assignment.interval.ms", 0),
        ("group.consumer.max.assignment.interval.ms", 15000),
    ),
    (
        "share.heartbeat.interval.ms",
        _RANGE,
        ("group.share.min.heartbeat.interval.ms", 5000),
        ("group.share.max.heartbeat.interval.ms", 15000),
    ),
    (
        "share.session.timeout.ms",
        _RANGE,
        ("group.share.min.session.timeout.ms", 45000),
        ("group.share.max.session.timeout.ms", 60000),
    ),
    (
        "share.record.lock.duration.ms",
        _RANGE,
        ("group.share.min.record.lock.duration.ms", 15000),
        ("group.share.max.record.lock.duration.ms", 60000),
    ),
    (
        "share.delivery.count.limit",
        _RANGE,
        ("group.share.min.delivery.count.limit", 2),
        ("group.share.max.delivery.count.limit", 10),
    ),
    (
        "share.partition.max.record.locks",
        _RANGE,
        ("group.share.min.partition.max.record.locks", 100),
        ("group.share.max.partition.max.record.locks", 4000),
    ),
    (
        "share.assignment.interval.ms",
        _RANGE,
        ("group.share.min.assignment.interval.ms", 0),
        ("group.share.max.assignment.interval.ms", 15000),
    ),
    (
        "streams.heartbeat.interval.ms",
        _RANGE,
        ("group.streams.min.heartbeat.interval.ms", 5000),
        ("group.streams.max.heartbeat.interval.ms", 15000),
    ),
    (
        "streams.session.timeout.ms",
        _RANGE,
        ("group.streams.min.session.timeout.ms", 45000),
        ("group.streams.max.session.timeout.ms", 60000),
    ),
    ("streams.num.standby.replicas", _MAX, None, ("group.streams.max.standby.replicas", 2)),
    (
        "streams.assignment.interval.ms",
        _RANGE,
        ("group.streams.min.assignment.interval.ms", 0),
        ("group.streams.max.assignment.interval.ms", 15000),
    ),
    (
        "streams.task.offset.interval.ms",
        _MIN,
        ("group.streams.min.task.offset.interval.ms", 15000),
        None,
    ),
    ("streams.num.warmup.replicas", _MAX, None, ("group.streams.max.warmup.replicas", 20)),
]
_SESSIONS = [
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
]
_ASSIGNORS = "group.streams.assignors"

DLQ_PREFIX_KEY = "errors.deadletterqueue.topic.name.prefix"
"""Kafka 4.4's broker setting (``GroupCoordinatorConfig``, default ``dlq.``) for the prefix
a share group's dead-letter topic must have.  Not checked here (Kafka's GROUP config
accepts any name not starting with ``__``): Kafka checks it when it writes a dead letter,
and so does :mod:`riverbed.broker.share_dead_letters`."""

BROKER_KEYS: frozenset[str] = frozenset(
    {k.synonym for k in KEYS.values() if k.synonym}
    | {b[0] for _k, _kind, lo, hi in _BOUNDS for b in (lo, hi) if b is not None}
    | {DLQ_PREFIX_KEY}
)
"""Broker settings (Kafka's names) this module reads: the synonyms and the bounds, and
the dead-letter prefix the broker accepts for :mod:`riverbed.broker.share_dead_letters`."""

_RESET_WORDS = (
    "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
)
# java.time.Duration.parse, which Kafka's by_duration: uses (case-insensitive)
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def _broker_int(broker: Mapping[str, str], setting: tuple[str, int]) -> int:
    raw = broker.get(setting[0])
    try:
        return int(str(raw).strip()) if raw is not None else setting[1]
    except ValueError:
        return setting[1]


def broker_value(broker: Mapping[str, str], key: GroupKey) -> str | None:
    """The broker's own setting of ``key``'s synonym (None when it sets none)."""
    if key.synonym is None or key.synonym not in broker:
        return None
    value = str(broker[key.synonym]).strip()
    if key.name == "streams.assignor.name":  # the first registered assignor
        names = _assignor_names(broker)
        return names[0] if names else ""
    return value


def _assignor_names(broker: Mapping[str, str]) -> list[str]:
    raw = str(broker.get(_ASSIGNORS, "sticky"))
    return [n.strip() for n in raw.split(",") if n.strip()]


def default_value(broker: Mapping[str, str], name: str) -> str:
    """``name``'s value for a group that sets none: the broker's, else Kafka's default."""
    key = KEYS[name]
    value = broker_value(broker, key)
    return key.default if value is None else value


def _not_number(name: str, raw: str, type_name: str) -> ConfigError:
    return ConfigError(
        f"Invalid value {raw} for configuration {name}: Not a number of type {type_name}"
    )


def _parse(key: GroupKey, raw: str) -> str:
    """Kafka's ConfigDef parse of one value: the value to store, or ConfigError."""
    name, value = key.name, raw.strip()
    if key.config_type in (INT, LONG):
        limit = _INT_MAX if key.config_type == INT else _LONG_MAX
        if not re.fullmatch(r"[-+]?[0-9]+", value) or not -limit - 1 <= int(value) <= limit:
            raise _not_number(name, raw, _TYPE_NAME[key.config_type])
        number = int(value)
        if key.at_least is not None and number < key.at_least:
            raise ConfigError(
                f"Invalid value {number} for configuration {name}: "
                f"Value must be at least {key.at_least}"
            )
        return str(number) if key.config_type == INT else value
    if key.config_type == BOOLEAN:
        if value.lower() not in ("true", "false"):
            raise ConfigError(
                f"Invalid value {raw} for configuration {name}: "
                "Expected value to be either true or false"
            )
        # Kafka describes the dead-letter flag normalised, the others as written
        return value.lower() if name.startswith("errors.") else raw
    if key.config_type == LIST:
        items = [] if not value else [i.strip() for i in value.split(",")]
        if any(not i for i in items):
            raise ConfigError(f"Configuration '{name}' values must not be empty.")
        return ",".join(items)
    if name == "share.auto.offset.reset":
        _check_reset(value)
    elif name == "share.isolation.level" and value not in ("read_committed", "read_uncommitted"):
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: "
            "String must be one of: read_committed, read_uncommitted"
        )
    return value


def _check_reset(value: str) -> None:
    name = "share.auto.offset.reset"
    if value in ("earliest", "latest"):
        return
    duration = value.removeprefix("by_duration:")
    match = _DURATION.fullmatch(duration) if duration != value else None
    valid = (
        match is not None
        and (match.group(2) or match.group(3))
        and (match.group(3) is None or len(match.group(3)) > 1)
        and not _negative(match)
    )
    if not valid:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: Invalid value `{value}` for "
            f"configuration {name}. {_RESET_WORDS}"
        )
    raise ConfigError(
        f"Invalid value {value} for configuration {name}: by_duration is not supported by "
        "Riverbed (share partitions start at the earliest or the latest offset)"
    )


def _negative(match: re.Match[str]) -> bool:
    sign = -1 if match.group(1) == "-" else 1
    days, hours, minutes, seconds = (int(match.group(i) or 0) for i in (2, 4, 5, 6))
    nanos = int((match.group(7) or "").ljust(9, "0") or 0)
    if (match.group(6) or "").startswith("-"):
        nanos = -nanos
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    return sign * (total * 10**9 + nanos) < 0


def validate(configs: Mapping[str, str], broker: Mapping[str, str]) -> dict[str, str]:
    """Check a group's whole set of configs (after the change) as Kafka 4.4's
    ``GroupConfig.validate`` does; the values to store (normalised as Kafka describes
    them), or ConfigError with Kafka's message for the first problem."""
    for name in configs:
        if name not in KEYS:
            raise ConfigError(f"Unknown group config name: {name}")
    tags = configs.get("streams.rack.aware.assignment.tags")
    if tags is not None and tags.strip():
        split = re.split(r"\s*,\s*", tags.strip())
        if len(set(split)) != len(split):
            raise ConfigError(
                "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
            )
    parsed = {name: _parse(key, configs[name]) for name, key in KEYS.items() if name in configs}
    _check_bounds(parsed, broker)
    return {name: parsed[name] for name in configs}


def _check_bounds(parsed: Mapping[str, str], broker: Mapping[str, str]) -> None:
    for name, kind, low, high in _BOUNDS:
        if name not in parsed:
            continue
        value = int(parsed[name])
        lo = _broker_int(broker, low) if low is not None else None
        hi = _broker_int(broker, high) if high is not None else None
        if kind == _RANGE and lo is not None and hi is not None and not lo <= value <= hi:
            raise ConfigError(f"{name} must be in the range {lo} to {hi} inclusive.")
        if kind == _MAX and hi is not None and value > hi:
            raise ConfigError(f"{name} must be less than or equal to {hi}")
        if kind == _MIN and lo is not None and value < lo:
            raise ConfigError(f"{name} must be greater than or equal to {lo}")
    assignor = parsed.get("streams.assignor.name")
    names = _assignor_names(broker)
    if assignor is not None and assignor not in names:
        raise ConfigError(
            f"streams.assignor.name '{assignor}' is not a registered task assignor. "
            f"Registered assignors are: [{', '.join(names)}]."
        )
    for session, heartbeat in _SESSIONS:
        if session in parsed or heartbeat in parsed:
            s = int(parsed.get(session, default_value(broker, session)))
            h = int(parsed.get(heartbeat, default_value(broker, heartbeat)))
            if s <= h:
                raise ConfigError(f"{session} must be greater than {heartbeat}")
    dlq = parsed.get("errors.deadletterqueue.topic.name")
    if dlq and dlq.startswith("__"):
        raise ConfigError(
            "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
        )


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    """One DescribeConfigs entry of a GROUP resource; ``synonyms`` are
    ``(name, value, source)`` in Kafka's order (group, static broker, default)."""

    name: str
    value: str
    source: int
    config_type: int
    synonyms: tuple[tuple[str, str, int], ...]


def describe(
    own: Mapping[str, str], broker: Mapping[str, str], names: Collection[str] | None = None
) -> list[DescribedConfig]:
    """The entries Kafka 4.4 answers for a group whose own configs are ``own``: every
    non-internal key, and internal ones the group set; ``names`` (None: all) filters,
    unknown names are left out.  Sorted by name (Kafka's order is a hash map's)."""
    entries = []
    for key in sorted(KEYS.values(), key=lambda k: k.name):
        if (names is not None and key.name not in names) or (key.internal and key.name not in own):
            continue
        static = broker_value(broker, key)
        synonyms: list[tuple[str, str, int]] = []
        if key.name in own:
            synonyms.append((key.name, own[key.name], GROUP_CONFIG))
        if static is not None:
            synonyms.append((key.synonym or key.name, static, STATIC_BROKER_CONFIG))
        synonyms.append((key.synonym or key.name, key.default, DEFAULT_CONFIG))
        _, value, source = synonyms[0]
        entries.append(DescribedConfig(key.name, value, source, key.config_type, tuple(synonyms)))
    return entries
