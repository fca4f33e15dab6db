"""Driver-side offset and metadata look-ups, over the wire with a Kafka client.

:class:`OffsetLookup` wraps one confluent-kafka ``AdminClient`` (librdkafka) and answers
the questions the source's planner asks: which partitions exist, and each one's log start
offset, high watermark, or first offset at/after a timestamp (ListOffsets).  It knows
nothing of Riverbed's broker: any Kafka-protocol cluster works.

:meth:`OffsetLookup.check_reachable` is the fail-fast probe ``load()`` runs: it gives up
as soon as librdkafka reports every bootstrap server down (connection refused, name not
resolved -- typically well under a second), and after at most
:data:`REACHABILITY_TIMEOUT_S` when servers accept no connection at all.

Not thread-safe: one instance per stream reader, used by the thread Spark calls the
reader on.  It holds sockets; :meth:`close` (or losing the process) releases them.  It is
never pickled -- readers drop it before travelling to workers.

Isolation: ``kafka.isolation.level`` (``read_uncommitted``, the default, or
``read_committed``) is sent with every ListOffsets.  Under ``read_committed`` "latest" is
the partition's *last stable offset* (LSO), not its high watermark, so a micro-batch never
plans past an open transaction and its tasks never wait on records they may not read.

A leader that dies (a Kafka cluster losing a broker): librdkafka keeps a ListOffsets for
it queued past its timeout while it reconnects (confluentinc/librdkafka#1869), and a
Metadata request can wait on the dead broker likewise, so each attempt waits at most
:data:`ATTEMPT_S`; a stalled attempt, or one answered
with a retriable error or without an offset (``OFFSET_INVALID``, seen just after a
leader died), is retried with a fresh client (fresh metadata: the new leader)
until ``kafkaConsumer.pollTimeoutMs`` has passed, then :class:`ConfigError`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from confluent_kafka import OFFSET_INVALID, IsolationLevel, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import OffsetSpec as KafkaOffsetSpec  # type: ignore[attr-defined]

from riverbed.errors import ConfigError, UnknownTopicOrPartitionError
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.spark.offsets import PartitionOffsets

T = TypeVar("T")

CLIENT_LOG = logging.getLogger("riverbed.spark.kafka_client")
"""librdkafka's own log lines of the source's look-up client and of the sink's producers
(:mod:`riverbed.spark.sink` imports it), with a NullHandler: configure logging to see
them.  Not stderr: an idle client kept by a reader or a Python worker logged every failed
reconnect there once its cluster went away; what matters reaches the caller as an error."""
CLIENT_LOG.addHandler(logging.NullHandler())

ATTEMPT_S = 10.0
"""Longest one ListOffsets or Metadata attempt waits before its client is replaced and it
is retried."""

REACHABILITY_TIMEOUT_S = 10.0
"""Longest the ``load()`` probe waits for a cluster that neither answers nor refuses."""
_UNREACHABLE = (KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE, KafkaError._AUTHENTICATION)


class OffsetLookup:
    """Partition counts and ListOffsets answers for one cluster."""

    def __init__(self, kafka_config: Mapping[str, str], timeout_ms: int) -> None:
        self._servers = kafka_config.get("bootstrap.servers", "")
        self._timeout_s = timeout_ms / 1000
        self._client_errors: list[KafkaError] = []
        self._isolation = isolation_level(kafka_config)
        config: dict[str, Any] = {k: v for k, v in kafka_config.items() if not _consumer_only(k)}
        config["error_cb"] = self._on_client_error
        # librdkafka's own log lines go to Python logging, not stderr: a reader kept by a
        # finished query logged every failed reconnect there once its cluster went away.
        config["logger"] = CLIENT_LOG
        self._config = config
        try:
            self._admin = AdminClient(config)
        except (KafkaException, ValueError, TypeError) as exc:
            raise ConfigError(f"invalid kafka.* option: {exc}") from None

    def partition_counts(self) -> dict[str, int]:
        """Every topic's current partition count (a Metadata request; retried with a
        fresh client when an attempt times out, as :meth:`_list_offsets`)."""

        def attempt(attempt_s: float) -> Any:
            self._admin.poll(0)  # serve queued error_cb events so they cannot pile up
            return self._admin.list_topics(timeout=attempt_s)

        def failure(exc: Exception) -> str:
            return (
                f"cannot reach kafka.bootstrap.servers={self._servers!r} within "
                f"{self._timeout_s:g} s: {exc.args[0] if exc.args else exc}"
            )

        metadata = self._with_fresh_clients(attempt, KafkaException, failure)
        return {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            if topic.error is None
        }

    def check_reachable(self) -> None:
        """Raise :class:`ConfigError` unless the cluster answers a Metadata request soon.

        Gives up once every bootstrap server is reported down (refused, unresolvable) or
        after ``min(kafkaConsumer.pollTimeoutMs, REACHABILITY_TIMEOUT_S)``.
        """
        limit_s = min(self._timeout_s, REACHABILITY_TIMEOUT_S)
        deadline = time.monotonic() + limit_s
        while True:
            try:
                self._admin.list_topics(timeout=min(0.25, max(0.01, deadline - time.monotonic())))
                return
            except KafkaException as exc:
                last = exc.args[0] if exc.args else exc
            self._admin.poll(0)  # runs error_cb
            down = [e for e in self._client_errors if e.code() in _UNREACHABLE]
            if down or time.monotonic() >= deadline:
                detail = "; ".join(
                    str(e.str()) for e in self._client_errors[:2] if e.code() not in _UNREACHABLE
                ) or str(down[0].str() if down else last)
                raise ConfigError(
                    f"cannot reach kafka.bootstrap.servers={self._servers!r} "
                    f"({'all servers down' if down else f'no answer in {limit_s:g} s'}): "
                    f"{detail}"
                )

    def _on_client_error(self, error: KafkaError) -> None:
        if len(self._client_errors) < 20:
            self._client_errors.append(error)

    def earliest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        spec = KafkaOffsetSpec.earliest()  # type: ignore[no-untyped-call]
        return self._list_offsets(dict.fromkeys(partitions, spec))

    def latest(self, partitions: Iterable[TopicPartition]) -> PartitionOffsets:
        """High watermarks, or last stable offsets under ``read_committed``."""
        spec = KafkaOffsetSpec.latest()  # type: ignore[no-untyped-call]
        return self._list_offsets(dict.fromkeys(partitions, spec))

    def for_timestamps(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        """First offset whose timestamp is >= the given one, or None when there is none."""
        found = self._list_offsets(
            {tp: KafkaOffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()}
        )
        return {tp: (offset if offset >= 0 else None) for tp, offset in found.items()}

    def close(self) -> None:
        """Drop the client: librdkafka closes its sockets when the handle is freed."""
        del self._admin

    def _list_offsets(self, specs: Mapping[TopicPartition, KafkaOffsetSpec]) -> PartitionOffsets:
        if not specs:
            return {}
        request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()}

        def attempt(attempt_s: float) -> PartitionOffsets:
            futures = self._admin.list_offsets(
                request, isolation_level=self._isolation, request_timeout=attempt_s
            )
            return self._collect(futures, time.monotonic() + attempt_s)

        def failure(exc: Exception) -> str:
            assert isinstance(exc, _Retry)
            return (
                f"ListOffsets for {exc.partition} failed on {self._servers!r} "
                f"for {self._timeout_s:g} s: {exc.reason}"
            )

        return self._with_fresh_clients(attempt, _Retry, failure)

    def _with_fresh_clients(
        self,
        attempt: Callable[[float], T],
        retried: type[Exception],
        failure: Callable[[Exception], str],
    ) -> T:
        """``attempt(attempt_s)`` (each try at most ``ATTEMPT_S``, at least 0.5 s) until it
        returns, for up to the lookup's timeout; after each ``retried`` exception a fresh
        client, which asks for metadata again (a dead leader's successor).  Past the
        deadline, :class:`ConfigError` with ``failure(exc)``; other exceptions propagate."""
        deadline = time.monotonic() + self._timeout_s
        while True:
            attempt_s = max(0.5, min(ATTEMPT_S, deadline - time.monotonic()))
            try:
                return attempt(attempt_s)
            except retried as exc:
                if time.monotonic() >= deadline:
                    raise ConfigError(failure(exc)) from None
            self._admin = AdminClient(self._config)

    def _collect(self, futures: Mapping[Any, Any], until: float) -> PartitionOffsets:
        out: PartitionOffsets = {}
        for ktp, future in futures.items():
            tp = TopicPartition(ktp.topic, ktp.partition)
            try:
                offset = int(future.result(timeout=max(0.1, until - time.monotonic())).offset)
                if offset == OFFSET_INVALID:  # answered without an offset: a leader change
                    raise _Retry(f"{tp.topic}-{tp.partition}", "no offset in the answer")
                out[tp] = offset
            except TimeoutError:
                raise _Retry(f"{tp.topic}-{tp.partition}", "no answer (leader down?)") from None
            except KafkaException as exc:
                error = exc.args[0] if exc.args else exc
                code = error.code() if isinstance(error, KafkaError) else None
                if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise UnknownTopicOrPartitionError(
                        f"{tp.topic}-{tp.partition} does not exist"
                    ) from None
                if isinstance(error, KafkaError) and (error.retriable() or code in _RETRIED_CODES):
                    raise _Retry(f"{tp.topic}-{tp.partition}", str(error)) from None
                raise ConfigError(
                    f"ListOffsets for {tp.topic}-{tp.partition} failed on "
                    f"{self._servers!r}: {error}"
                ) from None
        return out


_RETRIED_CODES = (
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.REPLICA_NOT_AVAILABLE,
    KafkaError.OFFSET_NOT_AVAILABLE,
    # a leader just elected, or a client's stale view of it: seen after a broker kill
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.FENCED_LEADER_EPOCH,
)


class _Retry(Exception):
    """One ListOffsets attempt stalled or failed in a way a fresh client may not."""

    def __init__(self, partition: str, reason: str) -> None:
        super().__init__(partition, reason)
        self.partition = partition
        self.reason = reason


def isolation_level(kafka_config: Mapping[str, str]) -> IsolationLevel:
    """The ``isolation.level`` of ``kafka_config`` (default ``read_uncommitted``, as Spark)."""
    value = kafka_config.get("isolation.level", "read_uncommitted").strip().lower()
    if value == "read_committed":
        return IsolationLevel.READ_COMMITTED
    if value == "read_uncommitted":
        return IsolationLevel.READ_UNCOMMITTED
    raise ConfigError(
        f"option 'kafka.isolation.level' must be read_committed or read_uncommitted, got {value!r}"
    )


_CONSUMER_ONLY = (
    "group.",
    "isolation.level",
    "fetch.",
    "max.poll",
    "session.timeout.ms",
    "heartbeat.",
    "partition.assignment",
    "auto.commit",
    "check.crcs",
)


def _consumer_only(key: str) -> bool:
    return key.startswith(_CONSUMER_ONLY)
