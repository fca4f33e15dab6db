"""The options of the ``riverbed`` Spark format, named and checked as Spark's Kafka source does.

Spark hands a Python data source its options lower-cased (a ``CaseInsensitiveDict``), so
every name here is compared in lower case; the user may write ``startingOffsets``.

Source options (``spark.read`` / ``spark.readStream``)::

    kafka.bootstrap.servers            required; every other kafka.* is passed to the client
    subscribe | subscribePattern | assign       exactly one
    startingOffsets   earliest | latest | {"t":{"0":23,"1":-2}}   (stream default latest,
                                                                   batch default earliest)
    endingOffsets     latest | {"t":{"0":50,"1":-1}}               (batch only)
    startingTimestamp / endingTimestamp         epoch ms, for every partition
    startingOffsetsByTimestamp / endingOffsetsByTimestamp   {"t":{"0":1700000000000}}
    startingOffsetsByTimestampStrategy          error (default) | latest
    maxOffsetsPerTrigger                        rows per micro-batch, all partitions together
    failOnDataLoss                              true (default) | false
    includeHeaders                              false (default) | true
    kafkaConsumer.pollTimeoutMs                 give up on a broker after this long (30000)

Sink options (``df.write`` / ``df.writeStream``)::

    kafka.bootstrap.servers, kafka.*, topic (used when a row has no topic column)
    deliveryGuarantee      at_least_once (default) | exactly_once   (streaming only)
    transactionalIdPrefix  exactly_once: prefix of transactional ids and marker groups
                           (default riverbed-spark)
    markerTopic            exactly_once: the topic whose partition 0 keys the batch
                           markers (default: the topic option; required without it)
    kafka.transactional.id is refused: the exactly-once sink names its producers itself

Anything else is refused with a :class:`~riverbed.errors.ConfigError` naming it, before
a query starts.  Values are frozen slotted dataclasses: picklable, so they travel to
Spark's Python workers inside the reader or writer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from riverbed.errors import ConfigError
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.spark.offsets import (
    EARLIEST,
    LATEST,
    PartitionOffsets,
    parse_offsets_json,
    parse_timestamps_json,
)

SOURCE_OPTIONS = frozenset(
    {
        "subscribe",
        "subscribepattern",
        "assign",
        "startingoffsets",
        "endingoffsets",
        "startingtimestamp",
        "endingtimestamp",
        "startingoffsetsbytimestamp",
        "endingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
        "maxoffsetspertrigger",
        "failondataloss",
        "includeheaders",
        "kafkaconsumer.polltimeoutms",
    }
)
SINK_OPTIONS = frozenset({"topic", "deliveryguarantee", "transactionalidprefix", "markertopic"})
DEFAULT_TRANSACTIONAL_ID_PREFIX = "riverbed-spark"
DeliveryGuarantee = Literal["at_least_once", "exactly_once"]
# Options Spark itself adds to a writer's or reader's options; not ours to check.
# (``queryName`` reaches a sink as an option when the query is named.)
SPARK_OWNED_OPTIONS = frozenset({"checkpointlocation", "path", "queryname"})
# Options the source sets itself: a user value would break offset tracking.
FORBIDDEN_KAFKA_PARAMS = frozenset(
    {"auto.offset.reset", "enable.auto.commit", "enable.auto.offset.store"}
)
DEFAULT_POLL_TIMEOUT_MS = 30_000


@dataclass(frozen=True, slots=True)
class Earliest:
    """Start (or end) at each partition's log start offset."""


@dataclass(frozen=True, slots=True)
class Latest:
    """Start (or end) at each partition's high watermark."""


@dataclass(frozen=True, slots=True)
class SpecificOffsets:
    """Per-partition offsets, ``-2``/``-1`` meaning earliest/latest."""

    offsets: tuple[tuple[TopicPartition, int], ...]

    def as_dict(self) -> PartitionOffsets:
        return dict(self.offsets)


@dataclass(frozen=True, slots=True)
class GlobalTimestamp:
    """The first offset whose timestamp is >= ``timestamp_ms``, in every partition."""

    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class PartitionTimestamps:
    """Per-partition timestamps (epoch ms)."""

    timestamps: tuple[tuple[TopicPartition, int], ...]

    def as_dict(self) -> PartitionOffsets:
        return dict(self.timestamps)


OffsetSpec = Earliest | Latest | SpecificOffsets | GlobalTimestamp | PartitionTimestamps


@dataclass(frozen=True, slots=True)
class Subscribe:
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SubscribePattern:
    pattern: str


@dataclass(frozen=True, slots=True)
class Assign:
    partitions: tuple[TopicPartition, ...]


Subscription = Subscribe | SubscribePattern | Assign


def select_partitions(
    subscription: Subscription, partition_counts: Mapping[str, int]
) -> set[TopicPartition]:
    """The partitions a subscription reads, given each topic's current partition count.

    Assigned partitions are returned as named even when the topic lacks them (the caller
    decides whether that is data loss); internal topics (``__``-prefixed) never match a pattern.
    """
    match subscription:
        case Assign(partitions):
            return set(partitions)
        case Subscribe(topics):
            return {TopicPartition(t, p) for t in topics for p in range(partition_counts.get(t, 0))}
        case SubscribePattern(pattern):
            regex = re.compile(pattern)
            return {
                TopicPartition(t, p)
                for t, n in partition_counts.items()
                if not t.startswith("__") and regex.fullmatch(t)
                for p in range(n)
            }


@dataclass(frozen=True, slots=True)
class SourceOptions:
    kafka_params: tuple[tuple[str, str], ...]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    timestamp_strategy: Literal["error", "latest"]
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int

    def kafka_config(self) -> dict[str, str]:
        return dict(self.kafka_params)


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """The sink's options.  With ``exactly_once``, ``marker_topic`` is never None."""

    kafka_params: tuple[tuple[str, str], ...]
    topic: str | None
    delivery_guarantee: DeliveryGuarantee = "at_least_once"
    transactional_id_prefix: str = DEFAULT_TRANSACTIONAL_ID_PREFIX
    marker_topic: str | None = None

    def kafka_config(self) -> dict[str, str]:
        return dict(self.kafka_params)


def _split(
    options: Mapping[str, str], allowed: frozenset[str]
) -> tuple[dict[str, str], dict[str, str]]:
    kafka: dict[str, str] = {}
    own: dict[str, str] = {}
    for raw_key, value in options.items():
        key = raw_key.lower()
        if key.startswith("kafka."):
            name = key[len("kafka.") :]
            if name in FORBIDDEN_KAFKA_PARAMS:
                raise ConfigError(
                    f"option {raw_key!r} is not supported: the riverbed source tracks offsets "
                    "itself (use startingOffsets / failOnDataLoss instead)"
                )
            kafka[name] = str(value)
        elif key in allowed:
            own[key] = str(value)
        elif key in SPARK_OWNED_OPTIONS:
            continue
        else:
            known = ", ".join(sorted(allowed | {"kafka.*"}))
            raise ConfigError(f"unknown option {raw_key!r} for format 'riverbed' (known: {known})")
    if not kafka.get("bootstrap.servers"):
        raise ConfigError("option 'kafka.bootstrap.servers' is required")
    return kafka, own


def _bool(own: Mapping[str, str], key: str, default: bool) -> bool:
    value = own.get(key)
    if value is None:
        return default
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"option {key!r} must be true or false, got {value!r}")


def _int(own: Mapping[str, str], key: str, minimum: int) -> int | None:
    value = own.get(key)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"option {key!r} must be an integer, got {value!r}") from None
    if number < minimum:
        raise ConfigError(f"option {key!r} must be >= {minimum}, got {number}")
    return number


def _subscription(own: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in own]
    if len(given) != 1:
        raise ConfigError(
            "exactly one of 'subscribe', 'subscribePattern' or 'assign' is required"
            + (f", got {given}" if given else "")
        )
    key = given[0]
    value = own[key]
    if key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ConfigError(f"option 'subscribe' names no topic: {value!r}")
        return Subscribe(topics)
    if key == "subscribepattern":
        try:
            re.compile(value)
        except re.error as exc:
            raise ConfigError(
                f"option 'subscribePattern' {value!r} is not a regex: {exc}"
            ) from None
        return SubscribePattern(value)
    return Assign(tuple(sorted(_parse_assign(value))))


def _parse_assign(value: str) -> set[TopicPartition]:
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f'assign: malformed JSON {value!r} ({exc.msg}); expected like {{"topic":[0,1]}}'
        ) from None
    if not isinstance(data, dict) or not all(
        isinstance(ps, list) and all(isinstance(p, int) and p >= 0 for p in ps)
        for ps in data.values()
    ):
        raise ConfigError(f'assign: expected {{"topic":[0,1]}}, got {value!r}')
    parts = {TopicPartition(str(t), p) for t, ps in data.items() for p in ps}
    if not parts:
        raise ConfigError(f"assign: names no partition: {value!r}")
    return parts


def _offset_spec(own: Mapping[str, str], prefix: str) -> OffsetSpec | None:
    """``prefix`` is 'starting' or 'ending'; timestamp options take precedence, as in Spark."""
    ts = _int(own, f"{prefix}timestamp", 0)
    if ts is not None:
        return GlobalTimestamp(ts)
    by_ts = own.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        parsed = parse_timestamps_json(by_ts, f"{prefix}OffsetsByTimestamp")
        return PartitionTimestamps(tuple(sorted(parsed.items())))
    value = own.get(f"{prefix}offsets")
    if value is None:
        return None
    word = value.strip().lower()
    if word == "earliest":
        return Earliest()
    if word == "latest":
        return Latest()
    parsed = parse_offsets_json(value, f"{prefix}Offsets")
    return SpecificOffsets(tuple(sorted(parsed.items())))


def parse_source_options(options: Mapping[str, str], *, streaming: bool | None) -> SourceOptions:
    """Check and parse source options; raises :class:`ConfigError` naming the bad one.

    ``streaming=None`` checks only what holds for both kinds of query (used by
    ``schema()``, which Spark calls before it knows).
    """
    kafka, own = _split(options, SOURCE_OPTIONS)
    subscription = _subscription(own)
    starting = _offset_spec(own, "starting") or (Latest() if streaming else Earliest())
    ending = _offset_spec(own, "ending")
    if streaming is True and ending is not None:
        raise ConfigError("endingOffsets/endingTimestamp are not valid in streaming queries")
    ending = ending or Latest()
    if streaming is False:
        if isinstance(starting, Latest) or (
            isinstance(starting, SpecificOffsets) and LATEST in dict(starting.offsets).values()
        ):
            raise ConfigError("startingOffsets 'latest' (-1) is not valid in batch queries")
        if isinstance(ending, Earliest) or (
            isinstance(ending, SpecificOffsets) and EARLIEST in dict(ending.offsets).values()
        ):
            raise ConfigError("endingOffsets 'earliest' (-2) is not valid in batch queries")
    strategy = own.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigError(
            f"option 'startingOffsetsByTimestampStrategy' must be error or latest, got {strategy!r}"
        )
    return SourceOptions(
        kafka_params=tuple(sorted(kafka.items())),
        subscription=subscription,
        starting=starting,
        ending=ending,
        timestamp_strategy="latest" if strategy == "latest" else "error",
        max_offsets_per_trigger=_int(own, "maxoffsetspertrigger", 1),
        fail_on_data_loss=_bool(own, "failondataloss", True),
        include_headers=_bool(own, "includeheaders", False),
        poll_timeout_ms=_int(own, "kafkaconsumer.polltimeoutms", 1) or DEFAULT_POLL_TIMEOUT_MS,
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check and parse sink options; raises :class:`ConfigError` naming the bad one."""
    kafka, own = _split(options, SINK_OPTIONS)
    if "transactional.id" in kafka:
        raise ConfigError(
            "option 'kafka.transactional.id' is not supported: use "
            "deliveryGuarantee=exactly_once (transactional ids are named per query and task)"
        )
    guarantee = _delivery_guarantee(own.get("deliveryguarantee", "at_least_once"))
    topic = own.get("topic")
    marker_topic = own.get("markertopic")
    prefix = own.get("transactionalidprefix", DEFAULT_TRANSACTIONAL_ID_PREFIX).strip()
    if not prefix:
        raise ConfigError("option 'transactionalIdPrefix' must not be empty")
    if guarantee == "exactly_once":
        marker_topic = marker_topic or topic
        if not marker_topic:
            raise ConfigError(
                "deliveryGuarantee=exactly_once needs the 'topic' option or a 'markerTopic' "
                "(an existing topic whose partition 0 keys the batch markers)"
            )
    elif marker_topic is not None or "transactionalidprefix" in own:
        raise ConfigError(
            "options 'markerTopic' and 'transactionalIdPrefix' need deliveryGuarantee=exactly_once"
        )
    return SinkOptions(
        kafka_params=tuple(sorted(kafka.items())),
        topic=topic,
        delivery_guarantee=guarantee,
        transactional_id_prefix=prefix,
        marker_topic=marker_topic,
    )


def _delivery_guarantee(value: str) -> DeliveryGuarantee:
    normal = value.strip().lower().replace("-", "_")
    if normal == "exactly_once":
        return "exactly_once"
    if normal == "at_least_once":
        return "at_least_once"
    raise ConfigError(
        f"option 'deliveryGuarantee' must be at_least_once or exactly_once, got {value!r}"
    )
