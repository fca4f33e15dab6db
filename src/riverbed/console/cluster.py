"""What the console reads from a Kafka cluster: blocking calls through Kafka clients only.

Every method here blocks (librdkafka, kafka-python and :class:`ShareGroupAdmin` are
synchronous) and is meant to run on a worker thread: :mod:`riverbed.console.app` calls them
through :func:`riverbed.console.app.blocking` with a timeout, never on the event loop.
Each call opens its own short-lived clients, so :class:`Cluster` holds no connection and is
safe to use from several threads at once.  It talks to the cluster only with
confluent-kafka (AdminClient, Consumer), kafka-python's admin client (transactions) and
:class:`riverbed.queue.admin.ShareGroupAdmin` (share groups), so it works against any Kafka
cluster.

Errors: an unreachable cluster raises
:class:`~riverbed.cli.kafka_admin.BrokerUnreachableError`; a refused or malformed request
raises :class:`ConsoleError` with a one-line message for the page.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from riverbed.cli.kafka_admin import TIMEOUT_S, check_reachable, client_config
from riverbed.errors import RiverbedError

CDC_OFFSETS_SUFFIX = ".cdc-offsets"
"""Topics named ``<prefix>.cdc-offsets`` hold CDC connector positions
(:mod:`riverbed.cdc.position`)."""

MAX_BROWSE = 200
"""Most records one message-browser page shows."""

MAX_SCAN = 20_000
"""Most records a key search reads per partition before giving up."""


class ConsoleError(RiverbedError):
    """A console request failed; the message is one line for the page.  The cluster refused
    or failed the request (HTTP 502), unless a subclass says otherwise."""


class NotFoundError(ConsoleError):
    """The topic, partition, group or transactional id asked for does not exist (HTTP 404)."""


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition: leader, replicas and its offsets (``-1``: unknown)."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    log_start_offset: int
    high_watermark: int

    @property
    def records(self) -> int:
        """Offsets between log start and high watermark (markers and gaps included)."""
        if self.log_start_offset < 0 or self.high_watermark < 0:
            return 0
        return self.high_watermark - self.log_start_offset


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic, its partitions (sorted) and, when asked for, its configs."""

    name: str
    partitions: tuple[PartitionInfo, ...]
    configs: tuple[tuple[str, str, bool], ...] = ()  # (name, value, is_default)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)


@dataclass(frozen=True, slots=True)
class Record:
    """One record as the browser shows it; ``value_json`` is the pretty-printed value when
    the value parses as JSON, else ``None``."""

    partition: int
    offset: int
    timestamp_ms: int
    key: str | None
    value: str | None
    value_json: str | None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Browse:
    """A message-browser result: the records and how many records were read to find them."""

    records: tuple[Record, ...]
    scanned: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class GroupLag:
    """A consumer or share group with its per-partition rows ``(topic, partition, committed
    or start offset, log end offset, lag)`` (``None``: unknown)."""

    group: str
    state: str
    kind: str
    partitions: tuple[tuple[str, int, int | None, int | None, int | None], ...] = ()
    members: tuple[str, ...] = ()
    note: str = ""  # why offsets or lag are missing, for the page

    @property
    def total_lag(self) -> int | None:
        """Sum of the known lags (as ``riverbed groups lag``); ``None`` when the broker gave
        none (see ``note``)."""
        if self.note:
            return None
        return sum(row[4] or 0 for row in self.partitions)


@dataclass(frozen=True, slots=True)
class Transaction:
    """A transactional id and what its coordinator says about it."""

    transactional_id: str
    state: str
    producer_id: int
    coordinator: int
    producer_epoch: int | None = None
    timeout_ms: int | None = None
    start_time_ms: int | None = None
    partitions: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class CdcPosition:
    """The latest position of one CDC connector source partition (compacted-topic value)."""

    topic: str
    connector: str
    source_partition: str
    position: str
    timestamp_ms: int


def _decode(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", errors="replace")


def _pretty(text: str | None) -> str | None:
    if text is None or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False)
    except ValueError:
        return None


def _kafka_message(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    text = arg.str() if hasattr(arg, "str") else str(arg)
    return str(text)


class Cluster:
    """Blocking reads of one cluster at ``bootstrap`` (see module doc)."""

    def __init__(
        self, bootstrap: str, timeout_s: float = TIMEOUT_S, properties: Sequence[str] = ()
    ) -> None:
        """``properties``: librdkafka ``KEY=VALUE`` settings for every confluent-kafka client
        (TLS, SASL, ...), also given to kafka-python (dots as underscores); the share-group
        admin speaks PLAINTEXT only.  :class:`ConfigError` when one is not KEY=VALUE."""
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.properties = tuple(properties)
        client_config(bootstrap, self.properties)  # malformed KEY=VALUE: fail at start

    def _admin(self) -> Any:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        check_reachable(self.bootstrap)
        try:
            return AdminClient(client_config(self.bootstrap, self.properties))
        except KafkaException as exc:  # a setting librdkafka refuses
            raise ConsoleError(f"client settings refused: {_kafka_message(exc)}") from None

    # -- helpers ----------------------------------------------------------------------

    def _result(self, future: Any, what: str) -> Any:
        from confluent_kafka import KafkaException

        try:
            return future.result(timeout=self.timeout_s)
        except KafkaException as exc:
            raise ConsoleError(f"{what} failed: {_kafka_message(exc)}") from None
        except TimeoutError:
            raise ConsoleError(f"{what} timed out after {self.timeout_s:g}s") from None

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer

        check_reachable(self.bootstrap)
        return Consumer(
            {
                **client_config(self.bootstrap, self.properties),
                "group.id": f"riverbed-console-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )

    def _offsets(self, admin: Any, keys: list[tuple[str, int]], spec: Any) -> dict[Any, int]:
        from confluent_kafka import TopicPartition

        if not keys:
            return {}
        futures = admin.list_offsets(
            {TopicPartition(t, p): spec for t, p in keys}, request_timeout=self.timeout_s
        )
        return {
            (tp.topic, tp.partition): self._result(fut, "listing offsets").offset
            for tp, fut in futures.items()
        }

    # -- topics -----------------------------------------------------------------------

    def topics(self, include_internal: bool = False) -> list[TopicInfo]:
        """Every topic with its partitions' offsets, sorted by name."""
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        admin = self._admin()
        try:
            metadata = admin.list_topics(timeout=self.timeout_s)
        except Exception as exc:  # KafkaException: cluster gone after the TCP check
            raise ConsoleError(f"listing topics failed: {_kafka_message(exc)}") from None
        names = sorted(
            n
            for n, t in metadata.topics.items()
            if t.error is None and (include_internal or not n.startswith("__"))
        )
        keys = [(n, p) for n in names for p in metadata.topics[n].partitions]
        starts = self._offsets(admin, keys, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
        ends = self._offsets(admin, keys, OffsetSpec.latest())  # type: ignore[no-untyped-call]
        out = []
        for name in names:
            parts = metadata.topics[name].partitions
            out.append(
                TopicInfo(
                    name,
                    tuple(
                        PartitionInfo(
                            p,
                            parts[p].leader,
                            tuple(parts[p].replicas),
                            starts.get((name, p), -1),
                            ends.get((name, p), -1),
                        )
                        for p in sorted(parts)
                    ),
                )
            )
        return out

    def high_watermarks(self) -> dict[str, int]:
        """Sum of the high watermarks of each non-internal topic (the throughput sampler)."""
        return {t.name: sum(p.high_watermark for p in t.partitions) for t in self.topics()}

    def topic(self, name: str) -> TopicInfo:
        """One topic with partitions and configs; :class:`ConsoleError` when unknown."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ConfigResource,
            ResourceType,
        )

        found = [t for t in self.topics(include_internal=True) if t.name == name]
        if not found:
            raise NotFoundError(f"unknown topic {name!r}")
        admin = self._admin()
        resource = ConfigResource(ResourceType.TOPIC, name)
        configs = self._result(admin.describe_configs([resource])[resource], "describing configs")
        rows = tuple(sorted((c.name, str(c.value), bool(c.is_default)) for c in configs.values()))
        t = found[0]
        return TopicInfo(t.name, t.partitions, rows)

    # -- message browser --------------------------------------------------------------

    def browse(
        self,
        topic: str,
        partition: int,
        *,
        offset: int | None = None,
        timestamp_ms: int | None = None,
        key: str | None = None,
        limit: int = 20,
    ) -> Browse:
        """Records of ``topic``/``partition`` from ``offset`` (default: the last ``limit``
        records), or from the first at or after ``timestamp_ms``; with ``key``, only records
        whose key equals it, scanning from the log start (or ``offset``) up to
        :data:`MAX_SCAN` records.  Reads stop at the high watermark."""
        from confluent_kafka import TopicPartition

        info = self.topic_partitions(topic)
        if partition not in info:
            raise NotFoundError(f"topic {topic!r} has no partition {partition}")
        low, high = info[partition]
        limit = max(1, min(limit, MAX_BROWSE))
        consumer = self._consumer()
        try:
            if timestamp_ms is not None:
                (found,) = consumer.offsets_for_times(
                    [TopicPartition(topic, partition, timestamp_ms)], timeout=self.timeout_s
                )
                start = found.offset if found.offset >= 0 else high
            elif offset is not None:
                start = min(max(offset, low), high)
            elif key is not None:
                start = low
            else:
                start = max(low, high - limit)
            if start >= high:
                return Browse((), 0, "no records at or after that position")
            consumer.assign([TopicPartition(topic, partition, start)])
            records: list[Record] = []
            scanned = 0
            cap = MAX_SCAN if key is not None else limit
            deadline = time.monotonic() + self.timeout_s
            position = start
            timed_out = False
            while position < high and scanned < cap and len(records) < limit:
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                msg = consumer.poll(0.2)
                if msg is None:
                    (tp,) = consumer.position([TopicPartition(topic, partition)])
                    position = max(position, tp.offset)  # markers leave gaps
                    continue
                if msg.error() is not None:
                    raise ConsoleError(f"reading {topic}-{partition} failed: {msg.error()}")
                scanned += 1
                position = msg.offset() + 1
                record = self._record(msg)
                if key is None or record.key == key:
                    records.append(record)
            note = ""
            if key is not None and scanned >= cap:
                note = f"stopped after scanning {scanned} records"
            elif timed_out:
                note = f"stopped after {self.timeout_s:g}s at offset {position}"
            return Browse(tuple(records), scanned, note)
        finally:
            consumer.close()

    @staticmethod
    def _record(msg: Any) -> Record:
        value = _decode(msg.value())
        _kind, ts = msg.timestamp()
        headers = tuple((k, _decode(v) or "") for k, v in (msg.headers() or []))
        return Record(
            msg.partition(), msg.offset(), ts, _decode(msg.key()), value, _pretty(value), headers
        )

    def topic_partitions(self, topic: str) -> dict[int, tuple[int, int]]:
        """``{partition: (log_start_offset, high_watermark)}``; :class:`ConsoleError` when
        the topic is unknown."""
        for t in self.topics(include_internal=True):
            if t.name == topic:
                return {p.partition: (p.log_start_offset, p.high_watermark) for p in t.partitions}
        raise NotFoundError(f"unknown topic {topic!r}")

    # -- groups -----------------------------------------------------------------------

    def consumer_groups(self) -> list[GroupLag]:
        """Every consumer group with its lag per partition."""
        from riverbed.cli.groups_command import GroupCommandError, _list

        admin = self._admin()
        try:
            names = [g.group_id for g in _list(admin)]
        except GroupCommandError as exc:
            raise ConsoleError(str(exc)) from None
        return [self.consumer_group(n, admin) for n in names]

    def consumer_group(self, group: str, admin: Any = None) -> GroupLag:
        """One consumer group: state, members, lag per partition."""
        from riverbed.cli.groups_command import (
            GroupCommandError,
            _owners,
            _partition_lags,
            _state,
        )

        admin = admin or self._admin()
        try:
            desc = self._result(
                admin.describe_consumer_groups([group])[group], f"describing {group}"
            )
            if _state(desc) == "DEAD":
                raise NotFoundError(f"unknown consumer group {group!r}")
            lags = _partition_lags(admin, group, _owners(desc))
        except GroupCommandError as exc:
            raise ConsoleError(str(exc)) from None
        return GroupLag(
            group,
            _state(desc),
            "consumer",
            tuple(
                (r.topic, r.partition, r.committed_offset, r.log_end_offset, r.lag) for r in lags
            ),
            tuple(f"{m.member_id} ({m.client_id}@{m.host})" for m in desc.members),
        )

    def share_groups(self) -> list[GroupLag]:
        """Every share group with its start offset and lag per partition (KIP-932)."""
        from riverbed.queue.admin import ShareAdminError, ShareGroupAdmin

        check_reachable(self.bootstrap)
        out = []
        try:
            with ShareGroupAdmin(self.bootstrap, timeout_s=self.timeout_s) as admin:
                for listing in admin.list_groups():
                    out.append(self._share_group(admin, listing.group_id))
        except ShareAdminError as exc:
            raise ConsoleError(str(exc)) from None
        except OSError as exc:
            raise ConsoleError(f"share-group admin failed: {exc}") from None
        return out

    def _share_group(self, admin: Any, group: str) -> GroupLag:
        """One share group: start offset and lag from DescribeShareGroupOffsets, log end
        offsets from ListOffsets; without that API, the members' assigned partitions."""
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        from riverbed.queue.admin import ShareAdminUnsupportedError

        described = admin.describe_group(group)
        members = tuple(f"{m.member_id} ({m.client_id}@{m.client_host})" for m in described.members)
        note = ""
        try:
            known = {
                (o.topic, o.partition): (
                    o.start_offset if o.start_offset >= 0 else None,
                    o.lag if o.lag >= 0 else None,
                )
                for o in admin.describe_offsets(group)
            }
        except ShareAdminUnsupportedError as exc:  # e.g. Riverbed without the API
            assigned = {tp for m in described.members for tp in m.assignment}
            known = {tp: (None, None) for tp in assigned}
            note = f"no lag: {exc}"
        keys = sorted(known)
        ends = self._offsets(self._admin(), keys, OffsetSpec.latest())  # type: ignore[no-untyped-call]
        rows = tuple((t, p, known[(t, p)][0], ends.get((t, p)), known[(t, p)][1]) for t, p in keys)
        return GroupLag(group, described.state, "share", rows, members, note)

    # -- transactions -----------------------------------------------------------------

    def _kafka_python_admin(self) -> Any:
        from kafka.admin import KafkaAdminClient

        check_reachable(self.bootstrap)
        config: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "request_timeout_ms": int(self.timeout_s * 1000),
        }
        for item in self.properties:
            key, _, value = item.partition("=")
            config[key.strip().replace(".", "_")] = value
        try:
            return KafkaAdminClient(**config)
        except Exception as exc:  # kafka-python: KafkaConfigurationError, TypeError, ...
            raise ConsoleError(f"kafka-python admin failed: {type(exc).__name__}") from None

    def transactions(self) -> list[Transaction]:
        """Every transactional id the coordinators know, sorted."""
        from kafka.errors import KafkaError

        admin = self._kafka_python_admin()
        try:
            by_broker = admin.list_transactions()
        except KafkaError as exc:
            raise ConsoleError(f"listing transactions failed: {type(exc).__name__}") from None
        finally:
            admin.close()
        return sorted(
            (
                Transaction(t.transactional_id, str(t.state.value), t.producer_id, broker)
                for broker, listings in by_broker.items()
                for t in listings
            ),
            key=lambda t: t.transactional_id,
        )

    def transaction(self, transactional_id: str) -> Transaction:
        """One transaction described by its coordinator."""
        from kafka.errors import KafkaError

        admin = self._kafka_python_admin()
        try:
            described = admin.describe_transactions([transactional_id])
        except KafkaError as exc:
            if "NotFound" in type(exc).__name__:
                raise NotFoundError(f"unknown transactional id {transactional_id!r}") from None
            raise ConsoleError(
                f"describing {transactional_id!r} failed: {type(exc).__name__}"
            ) from None
        finally:
            admin.close()
        if transactional_id not in described:
            raise NotFoundError(f"unknown transactional id {transactional_id!r}")
        d = described[transactional_id]
        start = d.transaction_start_time_ms
        return Transaction(
            transactional_id,
            str(d.state.value),
            d.producer_id,
            d.coordinator_id,
            d.producer_epoch,
            d.transaction_timeout_ms,
            None if start < 0 else start,
            tuple(sorted(f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions)),
        )

    # -- CDC connectors ---------------------------------------------------------------

    def cdc_positions(self) -> list[CdcPosition]:
        """The latest position per connector key in every ``*.cdc-offsets`` topic."""
        out: list[CdcPosition] = []
        for t in self.topics():
            if not t.name.endswith(CDC_OFFSETS_SUFFIX):
                continue
            latest: dict[str, Record] = {}
            for p in t.partitions:
                if p.records == 0:
                    continue
                batch = self.browse(t.name, p.partition, limit=MAX_BROWSE)  # the latest
                for r in batch.records:
                    latest[r.key or ""] = r
            for key, r in sorted(latest.items()):
                if r.value is None:
                    continue  # a tombstone: the position was forgotten
                connector, source = key, ""
                try:
                    parsed = json.loads(key)
                    connector, source = str(parsed[0]), json.dumps(parsed[1], sort_keys=True)
                except (ValueError, IndexError, KeyError, TypeError):
                    pass
                out.append(CdcPosition(t.name, connector, source, r.value, r.timestamp_ms))
        return out
