"""The broker's share partitions and their persistence in ``__share_group_state``.

:class:`SharePartitions` owns one :class:`~riverbed.share.share_partition.SharePartition`
per ``(share group, topic, partition)`` a member ever fetched, on the broker's event loop:

* **Creation.**  A share partition is created at its first ShareFetch, starting where
  ``share.auto.offset.reset`` says (``latest`` by default: the high watermark; per group
  through :meth:`SharePartitions.set_group_config`), and its first snapshot is written.
* **The topic.**  ``__share_group_state`` (``cleanup.policy=delete``, no time retention:
  :data:`SHARE_STATE_TOPIC_CONFIGS`; ``share.coordinator.state.topic.num.partitions``
  partitions, default 50) is created on first use, off the loop, as Kafka's share
  coordinator creates it; a share partition's records go to the partition Kafka would
  use (:func:`~riverbed.share.share_state_records.state_partition_for`), in Kafka's
  formats (:mod:`riverbed.share.share_state_records`), one v2 batch per partition per
  call.
* **Persistence before answers.**  Every change's records are appended in the order the
  share partition returned them; :meth:`SharePartitions.persist` returns the fsyncs
  covering them (durable flush policy, Riverbed's default), which ShareAcknowledge and a
  ShareFetch carrying acknowledgements await before answering: an ACCEPT is on disk
  before the client hears of it.  Acquisitions are appended without delaying the
  fetch (a crash then under-counts one delivery, as in Kafka).
* **Recovery.**  On start an existing ``__share_group_state`` is read off the loop from
  its log start and replayed (:class:`~riverbed.share.share_state_log.ShareStateReplay`);
  each share partition is restored (locks are not persisted: what was acquired is
  available again) and its group re-created empty in the membership coordinator.
* **Pruning.**  The redundant prefix of each state partition is deleted as it grows
  (:mod:`riverbed.broker.share_state_pruning`); share partitions that stopped changing
  are re-snapshotted every ``share.coordinator.cold.partition.snapshot.interval.ms``, and
  every ``share.coordinator.snapshot.update.records.per.snapshot`` changes (500) a
  change is written as a snapshot.
* **Lock expiry.**  One ``loop.call_later`` at the earliest lock deadline of any share
  partition; expired locks are released, persisted, and waiting share fetches of that
  partition are woken through the purgatory.

Event-loop only (not thread-safe).  Reads of ``__share_group_state`` at start happen on
the loop's default executor; appends go through the log (thread-safe) and complete their
fsyncs through futures, so the loop never waits on disk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol, cast

from riverbed.broker.group_configs import DLQ_PREFIX_KEY
from riverbed.broker.group_configs import GROUP_CONFIG_KEYS as OTHER_GROUP_CONFIG_KEYS
from riverbed.broker.share_state_pruning import (
    COLD_SNAPSHOT_INTERVAL_MS,
    COLD_SNAPSHOT_KEY,
    StatePruner,
)
from riverbed.coordinator.share_config import ShareGroupConfig
from riverbed.errors import ConfigError, CorruptSegmentError, RiverbedError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.share.share_partition import (
    AcknowledgeResult,
    AcknowledgeType,
    AcquireResult,
    ArchivedRecords,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    ShareStateChange,
    initial_start_offset,
)
from riverbed.share.share_state_log import ShareStateReplay
from riverbed.share.share_state_records import (
    ShareStateRecord,
    ShareStateTombstone,
    state_partition_for,
)

if TYPE_CHECKING:
    from riverbed.broker.config import BrokerConfig
    from riverbed.broker.handlers.deps import AppendListener
    from riverbed.broker.topics import Topic
    from riverbed.clock import Clock
    from riverbed.storage.log import PartitionLog

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC_NAME = "__share_group_state"
SHARE_STATE_TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": "-1"}
"""Never compacted (all ShareUpdates of a share partition share one key: compaction would
keep only the last) and never expired by time, as Kafka creates it; the redundant prefix
(below every share partition's latest snapshot) is what may be deleted."""
NUM_PARTITIONS_KEY = "share.coordinator.state.topic.num.partitions"
SNAPSHOT_UPDATES_KEY = "share.coordinator.snapshot.update.records.per.snapshot"
DEFAULT_NUM_PARTITIONS = 50
REPLAY_READ_BYTES = 1 << 20

DLQ_TOPIC_KEY = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD_KEY = "errors.deadletterqueue.copy.record.enable"
DEFAULT_DLQ_PREFIX = "dlq."
GROUP_CONFIG_KEYS = frozenset(
    {
        "share.record.lock.duration.ms",
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.auto.offset.reset",
        "share.isolation.level",
        DLQ_TOPIC_KEY,
        DLQ_COPY_RECORD_KEY,
    }
)
"""Per-group settings (Kafka 4.2's GROUP resource configs) a share partition honours, and
the dead-letter ones (KIP-1191, Kafka 4.4) :mod:`riverbed.broker.share_dead_letters` reads."""

Flushes = tuple[concurrent.futures.Future[None], ...]
ArchiveListener = Callable[[str, TopicPartition, Sequence[ArchivedRecords]], Flushes]
"""``listener(group, tp, archived)`` -> the fsyncs of what it wrote (dead letters)."""


class ShareStateUnavailableError(RiverbedError):
    """``__share_group_state`` cannot be written (being created, or the broker stops)."""

    error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    retriable = True


class StateTopics(Protocol):
    """The topic table as share partitions use it (a TopicManager)."""

    def get(self, name: str) -> Topic | None: ...

    def by_id(self, topic_id: uuid.UUID) -> Topic | None: ...

    def partition_log(self, name: str, partition: int) -> PartitionLog: ...

    async def create_topic_async(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic: ...


class SharePartitionsHost(Protocol):
    @property
    def config(self) -> BrokerConfig: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def topics(self) -> StateTopics: ...

    @property
    def purgatory(self) -> AppendListener: ...


@dataclass(frozen=True, slots=True)
class Persisted:
    """A change's outcome and the fsyncs that make it durable."""

    error_code: ErrorCode
    flushes: Flushes = ()
    error_message: str | None = None


class SharePartitions:
    """Every share partition of the broker (see the module docstring)."""

    def __init__(self, host: SharePartitionsHost, config: ShareGroupConfig) -> None:
        self._host = host
        self._clock = host.clock
        self.config = config
        self._partitions: dict[tuple[str, str, int], SharePartition] = {}
        self._group_configs: dict[str, dict[str, str]] = {}
        self._archive_listeners: list[ArchiveListener] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: int | None = None
        self._creating: asyncio.Future[None] | None = None
        self._closed = False
        self.pruner = StatePruner(
            lambda p: self._host.topics.partition_log(SHARE_STATE_TOPIC_NAME, p)
        )
        raw_cold = host.config.source.get(COLD_SNAPSHOT_KEY)
        self.cold_snapshot_interval_ms = (
            int(str(raw_cold).strip()) if raw_cold is not None else COLD_SNAPSHOT_INTERVAL_MS
        )
        raw_updates = host.config.source.get(SNAPSHOT_UPDATES_KEY)
        self.snapshot_update_records = (
            int(str(raw_updates).strip()) if raw_updates is not None else 500
        )
        self._cold_timer: asyncio.TimerHandle | None = None
        topic = host.topics.get(SHARE_STATE_TOPIC_NAME)
        self.num_partitions: int | None = None if topic is None else topic.partitions

    # -- configuration ---------------------------------------------------------------
    def partition_config(self, group_id: str) -> SharePartitionConfig:
        """The broker's share settings overlaid with the group's own (Kafka names)."""
        c = self.config
        values = self._group_configs.get(group_id, {})
        reset = values.get("share.auto.offset.reset", "latest").lower()
        isolation = values.get("share.isolation.level", "read_uncommitted").lower()
        return SharePartitionConfig(
            record_lock_duration_ms=int(
                values.get("share.record.lock.duration.ms", c.record_lock_duration_ms)
            ),
            delivery_count_limit=int(
                values.get("share.delivery.count.limit", c.delivery_count_limit)
            ),
            max_in_flight_records=int(
                values.get("share.partition.max.record.locks", c.partition_max_record_locks)
            ),
            auto_offset_reset=cast(Literal["latest", "earliest"], reset),
            isolation_level=cast(Literal["read_uncommitted", "read_committed"], isolation),
            snapshot_update_records=self.snapshot_update_records,
        )

    def set_group_config(self, group_id: str, configs: Mapping[str, str | None]) -> None:
        """Set (a value) or remove (None) per-group settings of :data:`GROUP_CONFIG_KEYS`
        (for IncrementalAlterConfigs on GROUP resources).  Applies to share partitions
        created from now on, and the lock duration / limits of existing ones."""
        current = dict(self._group_configs.get(group_id, {}))
        for key, value in configs.items():
            if key not in GROUP_CONFIG_KEYS and key not in OTHER_GROUP_CONFIG_KEYS:
                raise ValueError(f"unknown share group config {key!r}")
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        self.partition_config_check(current)
        self._dead_letter_check(current)
        self._group_configs[group_id] = current
        fresh = self.partition_config(group_id)
        for (g, _t, _p), sp in self._partitions.items():
            if g == group_id:
                sp.config = replace(
                    fresh, snapshot_update_records=sp.config.snapshot_update_records
                )

    def partition_config_check(self, values: Mapping[str, str]) -> None:
        saved = self._group_configs
        self._group_configs = {"": dict(values)}
        try:
            self.partition_config("")
        finally:
            self._group_configs = saved

    def _dead_letter_check(self, values: Mapping[str, str]) -> None:
        """The copy flag must be a boolean.  The topic name is not checked against
        :attr:`dead_letter_prefix` here: Kafka 4.4 accepts any name not starting with
        ``__`` as a group config (:mod:`riverbed.broker.group_configs`) and applies the
        prefix when it writes a dead letter (:mod:`riverbed.broker.share_dead_letters`)."""
        copy = values.get(DLQ_COPY_RECORD_KEY, "false").lower()
        if copy not in ("true", "false"):
            raise ConfigError(f"invalid value {copy!r} for {DLQ_COPY_RECORD_KEY}")

    @property
    def dead_letter_prefix(self) -> str:
        """``errors.deadletterqueue.topic.name.prefix`` (broker config, ``dlq.``; trimmed
        as Kafka's ConfigDef does; ``""``: any name)."""
        return str(self._host.config.source.get(DLQ_PREFIX_KEY, DEFAULT_DLQ_PREFIX)).strip()

    def group_config(self, group_id: str) -> Mapping[str, str]:
        return dict(self._group_configs.get(group_id, {}))

    def group_configs(self) -> dict[str, dict[str, str]]:
        """Every group's own settings (a copy; groups without any are left out)."""
        return {g: dict(c) for g, c in sorted(self._group_configs.items()) if c}

    def add_archive_listener(self, listener: ArchiveListener) -> None:
        """``listener(group, tp, archived)`` when REJECTs or the delivery limit archive
        offsets (dead letters).  It runs *before* the ARCHIVED state records are appended
        (a process crash in between leaves the offsets un-archived: delivered, and copied,
        again: at-least-once), and an acknowledgement's answer also awaits the fsyncs it
        returns."""
        self._archive_listeners.append(listener)

    # -- the topic -------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.num_partitions is not None

    async def ensure_topic(self) -> None:
        """Create ``__share_group_state`` on first use (off the loop); callers share one
        creation."""
        if self._closed:
            raise ShareStateUnavailableError("share groups are shutting down")
        if self.ready:
            return
        if self._creating is None:
            self._creating = asyncio.ensure_future(self._create())
        await asyncio.shield(self._creating)

    async def _create(self) -> None:
        try:
            topics = self._host.topics
            topic = topics.get(SHARE_STATE_TOPIC_NAME)
            if topic is None:
                raw = self._host.config.source.get(NUM_PARTITIONS_KEY)
                count = int(str(raw).strip()) if raw is not None else DEFAULT_NUM_PARTITIONS
                topic = await topics.create_topic_async(
                    SHARE_STATE_TOPIC_NAME, max(count, 1), configs=dict(SHARE_STATE_TOPIC_CONFIGS)
                )
                log.info("created %s with %d partitions", SHARE_STATE_TOPIC_NAME, topic.partitions)
            self.num_partitions = topic.partitions
        finally:
            self._creating = None

    # -- start-up --------------------------------------------------------------------
    async def load(self) -> list[str]:
        """Replay an existing ``__share_group_state`` (read off the loop) and restore its
        share partitions; returns the share group ids found."""
        if self.num_partitions is None:
            return []
        topics = self._host.topics
        logs = [topics.partition_log(SHARE_STATE_TOPIC_NAME, p) for p in range(self.num_partitions)]
        loop = asyncio.get_running_loop()
        replays = await loop.run_in_executor(None, _replay_logs, logs)
        now = self._clock.now_ms()
        groups: set[str] = set()
        states = {}
        for p, replay in enumerate(replays):
            self.pruner.replayed(p, replay.snapshot_offsets)
            states.update(replay.states())  # a share partition lives in one state partition
        for key, persisted in states.items():
            topic = topics.by_id(key.topic_id)
            if topic is None:
                continue  # the topic was deleted
            sp, change = SharePartition.restore(persisted, self.partition_config(key.group_id), now)
            self._partitions[(key.group_id, topic.name, key.partition)] = sp
            groups.add(key.group_id)
            self._apply(key.group_id, TopicPartition(topic.name, key.partition), change)
        if self._partitions:
            log.info(
                "share groups: restored %d share partition(s) of %d group(s) from %s",
                len(self._partitions),
                len(groups),
                SHARE_STATE_TOPIC_NAME,
            )
        self._rearm()
        return sorted(groups)

    # -- share partitions ------------------------------------------------------------
    def get(self, group_id: str, tp: TopicPartition) -> SharePartition | None:
        return self._partitions.get((group_id, tp.topic, tp.partition))

    def get_or_create(
        self, group_id: str, tp: TopicPartition, plog: PartitionLog
    ) -> SharePartition:
        """The share partition, created at ``share.auto.offset.reset`` (its first snapshot
        appended) if this is the group's first fetch of ``tp``.  Needs :meth:`ensure_topic`."""
        key = (group_id, tp.topic, tp.partition)
        sp = self._partitions.get(key)
        topic = self._host.topics.get(tp.topic)
        assert topic is not None
        if sp is not None and sp.topic_id == topic.topic_id:
            return sp
        # first fetch (or the topic was deleted and created again under the same name)
        config = self.partition_config(group_id)
        start = initial_start_offset(config, plog.log_start_offset, plog.high_watermark)
        sp = SharePartition(group_id, topic.topic_id, tp.partition, config, start_offset=start)
        self._partitions[key] = sp
        self._append((sp.snapshot(self._clock.now_ms()),))
        return sp

    def advance_start_offset(self, group_id: str, tp: TopicPartition, log_start: int) -> None:
        """The log's start moved past the share partition's (retention, DeleteRecords)."""
        sp = self._partitions.get((group_id, tp.topic, tp.partition))
        if sp is not None and log_start > sp.start_offset:
            self._apply(group_id, tp, sp.advance_start_offset(log_start, self._clock.now_ms()))

    def partitions_of(self, group_id: str) -> list[tuple[TopicPartition, SharePartition]]:
        """The group's share partitions (DescribeShareGroupOffsets: ``start_offset``), of
        topics that still exist under the id they were created for."""
        out = []
        for (g, t, p), sp in sorted(self._partitions.items(), key=lambda kv: kv[0]):
            topic = self._host.topics.get(t)
            if g == group_id and topic is not None and topic.topic_id == sp.topic_id:
                out.append((TopicPartition(t, p), sp))
        return out

    def acquire(
        self,
        group_id: str,
        member_id: str,
        tp: TopicPartition,
        batches: Sequence[tuple[int, int]],
        max_records: int,
    ) -> AcquireResult:
        """Lock what ``member_id`` gets of ``batches`` (read from :meth:`SharePartition.
        next_fetch_offset`); the state records are appended, not awaited."""
        sp = self._partitions[(group_id, tp.topic, tp.partition)]
        result = sp.acquire(member_id, batches, max_records, self._clock.now_ms())
        if result.records:
            self._append(result.records)
        self._rearm()
        return result

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        tp: TopicPartition,
        batches: Sequence[tuple[int, int, Sequence[int]]],
    ) -> Persisted:
        """Apply one partition's acknowledgements; the fsyncs to await before answering."""
        sp = self._partitions.get((group_id, tp.topic, tp.partition))
        if sp is None:
            return Persisted(ErrorCode.INVALID_RECORD_STATE, (), f"nothing was acquired from {tp}")
        start = sp.start_offset
        batches = _above(batches, start)
        result: AcknowledgeResult = sp.acknowledge(member_id, batches, self._clock.now_ms())
        if result.error_code != ErrorCode.NONE:
            return Persisted(result.error_code, (), result.error_message)
        flushes = self._archived(group_id, tp, result.archived)  # dead letters first
        flushes += self._append(result.records)
        released = any(t == AcknowledgeType.RELEASE for _f, _l, types in batches for t in types)
        if released or sp.start_offset != start:
            # records to deliver again, or room under the in-flight limit: wake the
            # share fetches waiting on this partition
            self._host.purgatory.notify(tp)
        self._rearm()
        return Persisted(ErrorCode.NONE, flushes)

    def release_member(self, group_id: str, member_id: str) -> Flushes:
        """The member left, timed out or closed its session: its locks are released in
        every share partition of the group."""
        flushes: list[concurrent.futures.Future[None]] = []
        now = self._clock.now_ms()
        for (g, t, p), sp in list(self._partitions.items()):
            if g == group_id:
                flushes += self._apply(g, TopicPartition(t, p), sp.release_member(member_id, now))
        self._rearm()
        return tuple(flushes)

    def release_member_in(
        self, group_id: str, member_id: str, tps: Iterable[TopicPartition]
    ) -> Flushes:
        """Release the member's locks in ``tps`` only: its share session closed (a final
        epoch, or its connection dropped).  As a RELEASE acknowledgement, so delivery
        counts are kept (and the delivery limit archives), which is what Apache Kafka 4.4
        answers on the wire (the next consumer sees delivery count 2;
        test_share_group_wire.py), unlike :meth:`release_member`'s uncounting release."""
        flushes: list[concurrent.futures.Future[None]] = []
        for tp in tps:
            sp = self._partitions.get((group_id, tp.topic, tp.partition))
            if sp is None:
                continue
            held = [
                (first, last, [int(AcknowledgeType.RELEASE)])
                for first, last, state, _count, holder in sp.in_flight()
                if state is RecordState.ACQUIRED and holder == member_id
            ]
            if held:
                flushes += self.acknowledge(group_id, member_id, tp, held).flushes
        self._rearm()
        return tuple(flushes)

    def reset_start_offset(self, group_id: str, tp: TopicPartition, offset: int) -> Flushes:
        """AlterShareGroupOffsets: start ``tp`` at ``offset`` (the caller checks that the
        group has no members).  Creates the share partition if needed."""
        topic = self._host.topics.get(tp.topic)
        if topic is None:
            raise ValueError(f"unknown topic {tp.topic}")
        key = (group_id, tp.topic, tp.partition)
        sp = self._partitions.get(key)
        if sp is None:
            sp = SharePartition(
                group_id, topic.topic_id, tp.partition, self.partition_config(group_id),
                start_offset=offset,
            )  # fmt: skip
            self._partitions[key] = sp
        return self._apply(group_id, tp, sp.reset_start_offset(offset, self._clock.now_ms()))

    def delete_topic_state(self, group_id: str, topic: str) -> Flushes:
        """DeleteShareGroupOffsets: forget the group's share partitions of ``topic``
        (one tombstone each; the caller checks that the group has no members).  A later
        fetch starts them again at ``share.auto.offset.reset``."""
        records: list[ShareStateTombstone] = []
        for key in [k for k in self._partitions if k[0] == group_id and k[1] == topic]:
            records.append(ShareStateTombstone(self._partitions.pop(key).key))
        return self._append(records) if records else ()

    def delete_group(self, group_id: str) -> Flushes:
        """Forget the group's share partitions (tombstones): DeleteGroups."""
        records: list[ShareStateTombstone] = []
        for key in [k for k in self._partitions if k[0] == group_id]:
            sp = self._partitions.pop(key)
            records.append(ShareStateTombstone(sp.key))
        self._group_configs.pop(group_id, None)
        return self._append(records) if records else ()

    # -- internals -------------------------------------------------------------------
    def _apply(self, group_id: str, tp: TopicPartition, change: ShareStateChange) -> Flushes:
        flushes = self._archived(group_id, tp, change.archived)  # dead letters first
        flushes += self._append(change.records) if change.records else ()
        if change.released:
            self._host.purgatory.notify(tp)
        return flushes

    def _archived(
        self, group_id: str, tp: TopicPartition, archived: Sequence[ArchivedRecords]
    ) -> Flushes:
        if not archived:
            return ()
        flushes: list[concurrent.futures.Future[None]] = []
        for listener in self._archive_listeners:
            try:
                flushes += listener(group_id, tp, archived)
            except Exception:
                log.exception("share group %s: archive listener failed", group_id)
        return tuple(flushes)

    def _append(self, records: Sequence[ShareStateRecord | ShareStateTombstone]) -> Flushes:
        """Append ``records`` in order, one batch per state partition; the fsyncs."""
        if not records:
            return ()
        if self.num_partitions is None:
            raise ShareStateUnavailableError(f"{SHARE_STATE_TOPIC_NAME} does not exist yet")
        by_partition: dict[int, list[ShareStateRecord | ShareStateTombstone]] = {}
        for record in records:
            p = state_partition_for(record.key, self.num_partitions)
            by_partition.setdefault(p, []).append(record)
        flushes: list[concurrent.futures.Future[None]] = []
        for p, batch in sorted(by_partition.items()):
            items: list[tuple[bytes | None, bytes | None]] = [
                (r.key_bytes(), r.value_bytes() if isinstance(r, ShareStateRecord) else None)
                for r in batch
            ]
            plog = self._host.topics.partition_log(SHARE_STATE_TOPIC_NAME, p)
            result = plog.append(build_batch(items, clock=self._clock), check_producer=False)
            self.pruner.appended(p, batch, result.last_offset)
            self._host.purgatory.notify(TopicPartition(SHARE_STATE_TOPIC_NAME, p))
            if plog.durable_acks:
                flushes.append(plog.flush_future(result.last_offset))
        return tuple(flushes)

    def _rearm(self) -> None:
        if self._closed:
            return
        if self._partitions:
            self._arm_cold_snapshots()
        deadline = min(
            (
                d
                for sp in self._partitions.values()
                if (d := sp.next_lock_deadline_ms()) is not None
            ),
            default=None,
        )
        if deadline == self._timer_deadline_ms and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline_ms = deadline
        if deadline is not None:
            delay_s = max(deadline - self._clock.now_ms(), 0) / 1000
            self._timer = asyncio.get_running_loop().call_later(delay_s, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline_ms = None
        if self._closed:
            return
        now = self._clock.now_ms()
        try:
            for (g, t, p), sp in list(self._partitions.items()):
                deadline = sp.next_lock_deadline_ms()
                if deadline is not None and deadline <= now:
                    self._apply(g, TopicPartition(t, p), sp.expire_locks(now))
        except Exception:
            log.exception("share partitions: lock expiry failed")
        self._rearm()

    def _arm_cold_snapshots(self) -> None:
        if not self._closed and self._cold_timer is None:
            delay_s = max(self.cold_snapshot_interval_ms, 1_000) / 1000
            loop = asyncio.get_running_loop()
            self._cold_timer = loop.call_later(delay_s, self._snapshot_cold)

    def _snapshot_cold(self) -> None:
        """Re-snapshot share partitions unchanged for the cold interval, so their old
        snapshots stop holding back the pruning of ``__share_group_state``."""
        self._cold_timer = None
        if self._closed:
            return
        now = self._clock.now_ms()
        try:
            cold = [
                sp.snapshot(now)
                for sp in self._partitions.values()
                if now - sp.last_snapshot_ms >= self.cold_snapshot_interval_ms
            ]
            self._append(cold)
        except Exception:
            log.exception("share partitions: cold snapshots failed")
        self._arm_cold_snapshots()

    def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._cold_timer is not None:
            self._cold_timer.cancel()
            self._cold_timer = None


def _above(
    batches: Sequence[tuple[int, int, Sequence[int]]], start: int
) -> list[tuple[int, int, Sequence[int]]]:
    """``batches`` without the offsets below the share-partition start offset: those are
    done, and Kafka ignores acknowledgements of them (no error), as checked against
    Kafka 4.4 (tests/integration/share_groups/test_share_group_wire.py)."""
    out: list[tuple[int, int, Sequence[int]]] = []
    for first, last, types in batches:
        if last < start:
            continue
        if first < start:
            types = types if len(types) == 1 else types[start - first :]
            first = start
        out.append((first, last, types))
    return out


def _replay_logs(logs: list[PartitionLog]) -> list[ShareStateReplay]:
    """Read every ``__share_group_state`` partition from its start (a worker thread):
    one replay per partition (its snapshot offsets drive the pruning)."""
    replays = []
    for plog in logs:
        replay = ShareStateReplay()
        replays.append(replay)
        offset, end = plog.log_start_offset, plog.log_end_offset
        while offset < end:
            try:
                data = plog.read(offset, REPLAY_READ_BYTES).records
            except CorruptSegmentError as exc:
                log.error("share groups: %s replayed only up to offset %d: %s", plog, offset, exc)
                break
            if not data:
                break
            for header, records in iter_batches_with_records(data, allow_partial_tail=True):
                next_offset = header.base_offset + header.last_offset_delta + 1
                if next_offset <= offset:
                    continue
                if not header.is_control:
                    for r in records:
                        if r.offset >= offset and r.key is not None:
                            try:
                                replay.apply_bytes(r.key, r.value, r.offset)
                            except RiverbedError as exc:
                                log.warning("share groups: unreadable state record: %s", exc)
                offset = next_offset
    return replays
