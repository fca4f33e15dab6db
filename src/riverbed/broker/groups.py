"""The broker's side of the group coordinator: persistence, timers and deferred answers.

:class:`GroupService` owns one :class:`~riverbed.coordinator.GroupCoordinator` (pure state
machines, see :mod:`riverbed.coordinator.coordinator` for the contract) on the broker's
event loop and does everything the coordinator may not do itself:

* **Persistence.**  Every record a handler or a timer returns is appended, before any
  answer is sent, to the internal compacted topic ``__consumer_offsets`` (created on first
  use, as Kafka does: the first FindCoordinator for a group, or the first call that would
  write, creates it off the loop with ``cleanup.policy=compact`` and
  ``offsets.topic.num.partitions`` partitions, default 50; until it exists every call that
  may write answers COORDINATOR_NOT_AVAILABLE, retriable, and read-only calls see no
  groups), partition :func:`~riverbed.coordinator.partition_for` of its group — the
  same partition Kafka would use, in Kafka's record formats
  (:mod:`riverbed.coordinator.offsets_topic_records`), one v2 batch per partition per call.
  Under a durable flush policy (Riverbed's default, ``flush.messages=1``) the answer to
  a call that wrote records waits for the fsync that covers them
  (returned with the answer by :meth:`GroupService.execute` as :class:`Executed`,
  awaited by the handlers), so an acknowledged
  offset commit survives a power loss, like an ``acks=all`` produce.
* **Recovery.**  On start every partition of an existing ``__consumer_offsets`` (a fresh
  data dir has none, and none is created) is read from its log
  start and replayed in order (:meth:`GroupCoordinator.replay`; transactional offsets
  only when their COMMIT marker is read, see :mod:`riverbed.broker.transactions`), then
  :meth:`GroupCoordinator.on_loaded` starts the members' sessions.  Classic groups'
  assignments, KIP-848 members' epochs and assignments (record key versions 3-8) and
  every committed offset survive a restart or a crash.  An existing topic keeps its
  partition count (the setting applies only on creation, as in Kafka).
* **Timers.**  One ``loop.call_later`` armed for :meth:`GroupCoordinator.next_deadline_ms`
  after every call (session timeouts, rebalance timeouts, the initial rebalance delay,
  offsets expiry every ``offsets.retention.check.interval.ms``).
* **Deferred answers.**  A handler that gets :class:`~riverbed.coordinator.Pending` waits on
  :meth:`GroupService.wait`; completions drained after every call resolve those futures.
  On :meth:`close` (broker stop) every waiter fails with :class:`CoordinatorClosedError`,
  which the handlers answer with COORDINATOR_NOT_AVAILABLE so the client rediscovers us.

Event-loop only (not thread-safe).  If an append fails (disk error, log closed) the
coordinator is rebuilt from the log, so memory never runs ahead of what was persisted, and
the error propagates (the connection is closed; the client retries).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from riverbed.coordinator import (
    OFFSETS_TOPIC_NAME,
    CoordinatorRecord,
    GroupCoordinator,
    GroupCoordinatorConfig,
    JoinGroupResponse,
    Pending,
    Reply,
    SyncGroupResponse,
    partition_for,
)
from riverbed.coordinator.config import coordinator_config_from_props
from riverbed.errors import CorruptSegmentError, RiverbedError
from riverbed.protocol.control import parse_control_record
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.records import Record, build_batch, iter_batches_with_records
from riverbed.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from riverbed.broker.config import BrokerConfig
    from riverbed.broker.handlers.deps import AppendListener, TopicNames
    from riverbed.broker.topics import Topic
    from riverbed.clock import Clock
    from riverbed.storage.log import PartitionLog

OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact"}
"""Settings ``__consumer_offsets`` is created with (the partition count comes from
``offsets.topic.num.partitions``)."""

log = logging.getLogger(__name__)

R = TypeVar("R")
Deferred = JoinGroupResponse | SyncGroupResponse
REPLAY_READ_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Executed(Generic[R]):
    """A coordinator call's ``response`` and the fsyncs covering the records it wrote
    (empty under a non-durable flush policy or when it wrote nothing): an answer that
    promises durability is sent only once every one has completed."""

    response: R
    flushes: tuple[concurrent.futures.Future[None], ...] = ()


class CoordinatorClosedError(RiverbedError):
    """The broker is stopping: a waiting join/sync is answered COORDINATOR_NOT_AVAILABLE."""

    error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    retriable = True


class OffsetsTopics(Protocol):
    """The topic table as the group service uses it: lookups, creating
    ``__consumer_offsets`` and its partitions' logs (a
    :class:`~riverbed.broker.topics.TopicManager`)."""

    def get(self, name: str) -> Topic | None: ...

    def by_id(self, topic_id: uuid.UUID) -> Topic | None: ...

    def topics(self) -> list[Topic]: ...

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic: ...

    async def create_topic_async(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic: ...

    def partition_log(self, name: str, partition: int) -> PartitionLog: ...


class GroupHost(Protocol):
    """What :class:`GroupService` needs of the broker (the
    :class:`~riverbed.broker.server.Broker` satisfies it structurally)."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def topics(self) -> OffsetsTopics: ...

    @property
    def purgatory(self) -> AppendListener: ...


class BrokerTopics:
    """The coordinator's view of the broker's topics (:class:`TopicMetadata`).  Regex
    subscriptions (KIP-848, resolved here) match internal topics too, as in Kafka 4:
    franz-go's ``Test848RegexBrokerResolves`` expects ``__consumer_offsets`` assigned
    (clients leave internal topics out of their own regex matching)."""

    def __init__(self, topics: TopicNames) -> None:
        self._topics = topics

    def partition_count(self, topic: str) -> int | None:
        found = self._topics.get(topic)
        return None if found is None else found.partitions

    def topic_names(self) -> Iterable[str]:
        return [t.name for t in self._topics.topics()]

    def topic_id(self, topic: str) -> uuid.UUID | None:
        found = self._topics.get(topic)
        return None if found is None else found.topic_id

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        found = self._topics.by_id(topic_id)
        return None if found is None else found.name


class GroupService:
    """One broker's group coordinator, persisted in ``__consumer_offsets``."""

    def __init__(self, broker: GroupHost, config: GroupCoordinatorConfig | None = None) -> None:
        self._broker = broker
        self.config = config or coordinator_config_from_props(broker.config.source)
        self._clock = broker.clock
        self.coordinator = GroupCoordinator(
            self.config, BrokerTopics(broker.topics), group_overrides=self._group_overrides
        )
        self._waiting: dict[int, asyncio.Future[Deferred]] = {}
        self._early: dict[int, Deferred] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: int | None = None
        self._closed = False
        self.replayed_txn_offsets: dict[tuple[int, int], list[tuple[bytes, bytes | None]]] = {}
        """Transactional offsets (TxnOffsetCommit) read by :meth:`load` whose marker is
        not in the log yet, by ``(producer id, partition)``: the transaction service takes
        them over and applies or drops them with the marker it writes."""
        self._creating: asyncio.Future[None] | None = None
        topic = broker.topics.get(OFFSETS_TOPIC_NAME)
        self.ready = topic is not None
        """``__consumer_offsets`` exists (and was replayed by :meth:`load`)."""
        self.num_partitions = (
            self.config.offsets_topic_num_partitions if topic is None else topic.partitions
        )
        """The topic's partition count, or the one it will be created with."""

    # -- the topic --------------------------------------------------------------------
    async def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` (first use) off the loop; concurrent callers
        share one creation.  Raises :class:`CoordinatorClosedError` while stopping.  A
        crash half way leaves what ``TopicManager`` leaves (no listed topic, or a whole
        one); the next start replays whatever is listed."""
        if self._closed:
            raise CoordinatorClosedError("the group coordinator is shutting down")
        if self.ready:
            return
        if self._creating is None:
            self._creating = asyncio.ensure_future(self._create())
        await asyncio.shield(self._creating)

    def _start_creating(self) -> None:
        """Begin creating the topic in the background (a call arrived before it exists)."""
        if self._creating is None and not self.ready and not self._closed:
            self._creating = asyncio.ensure_future(self._create())
            self._creating.add_done_callback(_log_failure)

    async def _create(self) -> None:
        topics = self._broker.topics
        try:
            topic = topics.get(OFFSETS_TOPIC_NAME)
            if topic is None:
                topic = await topics.create_topic_async(
                    OFFSETS_TOPIC_NAME,
                    self.config.offsets_topic_num_partitions,
                    configs=dict(OFFSETS_TOPIC_CONFIGS),
                )
                log.info("created %s with %d partitions", OFFSETS_TOPIC_NAME, topic.partitions)
            self.num_partitions = topic.partitions
            self.ready = True
        finally:
            self._creating = None

    def _group_overrides(self, group_id: str) -> Mapping[str, str]:
        """The group's own GROUP configs (kept with the share ones; none before start)."""
        share_groups = getattr(self._broker, "_share_groups", None)
        return share_groups.group_config(group_id) if share_groups is not None else {}

    # -- start-up ---------------------------------------------------------------------
    def load(self) -> int:
        """Replay ``__consumer_offsets`` (if it exists) into a fresh coordinator; returns
        the records read."""
        self.coordinator = GroupCoordinator(
            self.config, BrokerTopics(self._broker.topics), group_overrides=self._group_overrides
        )
        self.replayed_txn_offsets = {}
        count = 0
        for p in range(self.num_partitions if self.ready else 0):
            plog = self._broker.topics.partition_log(OFFSETS_TOPIC_NAME, p)
            count += self._replay_partition(plog)
        self.coordinator.on_loaded(self._clock.now_ms())
        self._rearm()
        if count:
            log.info("group coordinator loaded %d record(s) from %s", count, OFFSETS_TOPIC_NAME)
        return count

    def _replay_partition(self, plog: PartitionLog) -> int:
        offset, end, count = plog.log_start_offset, plog.log_end_offset, 0
        while offset < end:
            try:
                data = plog.read(offset, REPLAY_READ_BYTES).records
            except CorruptSegmentError as exc:  # start anyway; the rest is unreadable
                log.error(
                    "group coordinator: %s replayed only up to offset %d: %s", plog, offset, exc
                )
                break
            if not data:
                break
            for header, records in iter_batches_with_records(data, allow_partial_tail=True):
                next_offset = header.base_offset + header.last_offset_delta + 1
                if next_offset <= offset:
                    continue
                items = [
                    (r.key, r.value) for r in records if r.offset >= offset and r.key is not None
                ]
                if header.is_control:
                    self._replay_marker(plog, header.producer_id, records)
                elif header.is_transactional:
                    held = self.replayed_txn_offsets.setdefault(
                        (header.producer_id, plog.partition), []
                    )
                    held.extend((k, v) for k, v in items if k is not None)
                else:
                    for key, value in items:
                        assert key is not None
                        self.coordinator.replay(key, value)
                        count += 1
                offset = next_offset
        return count

    def _replay_marker(self, plog: PartitionLog, producer_id: int, records: list[Record]) -> None:
        """A COMMIT marker applies the producer's transactional offsets (TxnOffsetCommit)
        held since its batches, an ABORT drops them, as Kafka's replay does."""
        held = self.replayed_txn_offsets.pop((producer_id, plog.partition), [])
        try:
            commit = bool(records) and parse_control_record(records[0]).is_commit
        except RiverbedError as exc:
            log.warning("group coordinator: unreadable marker in %s: %s", plog, exc)
            return
        if commit:
            for key, value in held:
                self.coordinator.replay(key, value)

    # -- calls ------------------------------------------------------------------------
    def execute(self, handler: Callable[[int], Reply[R]]) -> Executed[R]:
        """Run one coordinator call at the broker's ``now``: append its records, deliver
        the completions it caused, re-arm the timer; its response (maybe Pending) with
        the fsyncs covering what it appended, which the caller awaits before answering."""
        if self._closed:
            raise CoordinatorClosedError("the group coordinator is shutting down")
        if not self.ready:  # a client that skipped FindCoordinator: create, then retry
            self._start_creating()
            raise CoordinatorClosedError(f"{OFFSETS_TOPIC_NAME} is being created")
        reply = handler(self._clock.now_ms())
        flushes = self._append(reply.records)
        self._deliver()
        self._rearm()
        return Executed(reply.response, flushes)

    def query(self, fn: Callable[[], R]) -> R:
        """A read-only call (OffsetFetch, ListGroups, ...): no records, no completions."""
        if self._closed:
            raise CoordinatorClosedError("the group coordinator is shutting down")
        return fn()

    async def wait(self, pending: Pending) -> Deferred:
        """The deferred answer for a Pending returned by :meth:`execute`."""
        early = self._early.pop(pending.token, None)
        if early is not None:
            return early
        fut: asyncio.Future[Deferred] = asyncio.get_running_loop().create_future()
        self._waiting[pending.token] = fut
        try:
            return await fut
        finally:
            self._waiting.pop(pending.token, None)

    def _deliver(self) -> None:
        for completion in self.coordinator.poll_completions():
            fut = self._waiting.pop(completion.token, None)
            if fut is None:
                self._early[completion.token] = completion.response
            elif not fut.done():
                fut.set_result(completion.response)

    def _append(
        self, records: tuple[CoordinatorRecord, ...] | list[CoordinatorRecord]
    ) -> tuple[concurrent.futures.Future[None], ...]:
        """Append ``records`` to their partitions; the fsyncs to await (durable logs)."""
        if not records:
            return ()
        flushes: list[concurrent.futures.Future[None]] = []
        by_partition: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        for record in records:
            p = partition_for(record.group_id, self.num_partitions)
            by_partition.setdefault(p, []).append((record.key, record.value))
        try:
            for p, items in sorted(by_partition.items()):
                plog = self._broker.topics.partition_log(OFFSETS_TOPIC_NAME, p)
                result = plog.append(build_batch(items, clock=self._clock), check_producer=False)
                self._broker.purgatory.notify(TopicPartition(OFFSETS_TOPIC_NAME, p))
                if plog.durable_acks:
                    flushes.append(plog.flush_future(result.last_offset))
        except Exception:
            log.exception(
                "appending to %s failed; reloading the group coordinator", OFFSETS_TOPIC_NAME
            )
            self._fail_waiters()
            self.load()
            raise
        return tuple(flushes)

    # -- timers -----------------------------------------------------------------------
    def _rearm(self) -> None:
        if self._closed:
            return
        deadline = self.coordinator.next_deadline_ms()
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
        try:
            self._append(self.coordinator.tick(self._clock.now_ms()))
        except Exception:
            log.exception("group coordinator timer failed")
        self._deliver()
        self._rearm()

    # -- shutdown ---------------------------------------------------------------------
    def _fail_waiters(self) -> None:
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(CoordinatorClosedError("the group coordinator is reloading"))
        self._waiting.clear()
        self._early.clear()

    def close(self) -> None:
        """Stop the timer and answer every waiting join/sync (broker stop)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._fail_waiters()


def _log_failure(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("creating %s failed: %s", OFFSETS_TOPIC_NAME, fut.exception())
