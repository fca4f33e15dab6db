"""The broker's side of the transaction coordinator: persistence, markers, timers.

:class:`TransactionService` owns one
:class:`~riverbed.coordinator.transactions.TransactionCoordinator` (a pure state machine,
see :mod:`riverbed.coordinator.transactions.transaction_coordinator` for the contract) on
the broker's event loop, as :class:`~riverbed.broker.groups.GroupService` owns the group
coordinator:

* **The topic.**  ``__transaction_state`` (compacted,
  ``transaction.state.log.num.partitions`` partitions, default 50) is created on first
  use -- FindCoordinator(TRANSACTION) or a transactional InitProducerId -- as Kafka
  creates it; an existing topic keeps its partition count.  As in Kafka, a
  ``transaction.state.log.replication.factor`` above the one live broker refuses the
  creation (COORDINATOR_NOT_AVAILABLE); unset, it counts as 1 (Kafka's default is 3).
* **Persistence.**  Every record a handler, a timer or a marker completion returns is
  appended to its id's partition before the answer is sent; under a durable flush
  policy the answer waits for the fsync covering it (:class:`Executed`) -- except an
  Ongoing record (AddPartitionsToTxn, AddOffsetsToTxn, implicit adds), answered once
  appended and once its id's earlier records are durable (:meth:`_append`).  A crash may
  lose it while the data partitions keep the producer's batches: on start,
  :meth:`_abort_unlisted` aborts such transactions
  (:mod:`riverbed.coordinator.transactions.orphans`).
* **Markers** (Kafka's WriteTxnMarkers, done locally): once the PrepareCommit /
  PrepareAbort record is durable, a COMMIT/ABORT control batch is appended to every
  partition of the transaction (:meth:`PartitionLog.append_control_marker`); when those
  are durable the coordinator completes the transaction (CompleteCommit/CompleteAbort).
  A partition whose topic is gone counts as written; a failed write is retried on the
  timer (:meth:`TransactionCoordinator.outstanding_markers`).  Offsets of
  TxnOffsetCommit are written to ``__consumer_offsets`` as a transactional batch of the
  producer (Kafka's format) and held here, per producer id and partition, until the
  marker there: COMMIT applies them to the group coordinator, ABORT drops them, so
  OffsetFetch sees them exactly when the transaction commits.
* **Recovery.**  On start an existing ``__transaction_state`` is replayed, then
  :meth:`TransactionCoordinator.recover` re-sends the markers of every transaction in
  PrepareCommit/PrepareAbort.  The group service's replay applies transactional
  offsets whose COMMIT marker it reads and hands over the rest
  (:attr:`GroupService.replayed_txn_offsets`), which the re-sent markers settle.
* **Waiting for markers.**  A producer's request that would be answered
  CONCURRENT_TRANSACTIONS because its previous transaction's markers are still being
  written (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn right after EndTxn) waits for them
  (:meth:`markers_done`, bounded) and runs again, as Kafka's partition leaders retry an
  implicit add internally, instead of costing the client a backoff.
* **Timers.**  One ``loop.call_later`` at :meth:`TransactionCoordinator.next_deadline_ms`
  (transaction timeouts, id expiration), plus a retry of failed marker writes.

Event-loop only (not thread-safe).  If an append to ``__transaction_state`` fails the
coordinator is rebuilt by replay, so memory never runs ahead of the log, and the error
propagates (the connection is closed; the client retries).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from riverbed.broker.groups import CoordinatorClosedError, Executed
from riverbed.coordinator import OFFSETS_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
from riverbed.coordinator.offsets_topic_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    offset_commit_record,
)
from riverbed.coordinator.partitioning import partition_for
from riverbed.coordinator.transactions import (
    TV_2,
    AddPartitionsToTxnRequest,
    MarkerRequest,
    OpenTransaction,
    TransactionCoordinator,
    TransactionCoordinatorConfig,
    TransactionRecord,
    TransactionResult,
    TxnReply,
    transaction_config_from_props,
)
from riverbed.errors import (
    CorruptSegmentError,
    RiverbedError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.protocol.topic_partition import TopicPartition

if TYPE_CHECKING:
    from riverbed.broker.config import BrokerConfig
    from riverbed.broker.groups import GroupService, OffsetsTopics
    from riverbed.broker.handlers.deps import AppendListener
    from riverbed.clock import Clock
    from riverbed.storage.log import PartitionLog

log = logging.getLogger(__name__)

R = TypeVar("R")
TRANSACTION_STATE_TOPIC_CONFIGS = {"cleanup.policy": "compact"}
REPLICATION_FACTOR_KEY = "transaction.state.log.replication.factor"
REPLAY_READ_BYTES = 1 << 20
MARKER_RETRY_S = 1.0
ANSWER_FIRST_YIELDS = 2
UNDURABLE_PRUNE_AT = 4096
"""Above this many ids with a tracked fsync, the done ones are dropped (bounded memory)."""
"""Loop turns the marker writer lets pass after the Prepare record is durable, so the
EndTxn answer waiting on the same fsync goes out first (:meth:`_write_markers`)."""


class CoordinatorNotAvailableError(RiverbedError):
    """``__transaction_state`` cannot be created (replication factor above the broker
    count) or the service is stopping: clients retry FindCoordinator."""

    error_code = ErrorCode.COORDINATOR_NOT_AVAILABLE
    retriable = True


@dataclass(frozen=True, slots=True)
class PendingOffset:
    """One offset of a TxnOffsetCommit, committed by the transaction's COMMIT marker."""

    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str


@dataclass(frozen=True, slots=True)
class ProduceVerdict:
    """Per-partition codes of :meth:`TransactionService.verify_produce`, and the fsyncs
    an implicit add must wait for before the data is appended (the id's previous
    decision, if not durable yet; see :meth:`TransactionService._append`)."""

    errors: Mapping[TopicPartition, ErrorCode]
    flushes: tuple[concurrent.futures.Future[None], ...] = ()


_RETRIABLE_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    }
)
TRANSACTION_ABORTABLE_PRODUCE_VERSION = 11


def _produce_code(code: ErrorCode, produce_version: int) -> ErrorCode:
    if code in _RETRIABLE_AS_NOT_ENOUGH_REPLICAS:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if (
        code == ErrorCode.TRANSACTION_ABORTABLE
        and produce_version < TRANSACTION_ABORTABLE_PRODUCE_VERSION
    ):
        return ErrorCode.INVALID_TXN_STATE
    return code


class TransactionHost(Protocol):
    """What :class:`TransactionService` needs of the broker (the Broker satisfies it)."""

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def topics(self) -> OffsetsTopics: ...

    @property
    def purgatory(self) -> AppendListener: ...

    @property
    def groups(self) -> GroupService: ...


class TransactionService:
    """One broker's transaction coordinator, persisted in ``__transaction_state``."""

    def __init__(
        self,
        host: TransactionHost,
        new_producer_id: Callable[[], int],
        config: TransactionCoordinatorConfig | None = None,
    ) -> None:
        self._host = host
        self._new_producer_id = new_producer_id
        self.config = config or transaction_config_from_props(host.config.source)
        self._clock = host.clock
        self.coordinator = TransactionCoordinator(new_producer_id, self.config)
        self._pending_offsets: dict[tuple[int, int], list[tuple[bytes, bytes | None]]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms: float | None = None
        self._creating: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Future[None]] = set()
        self._marker_waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._undurable: dict[str, concurrent.futures.Future[None]] = {}
        """Per transactional id, the fsync of its last record whose answer waits for it
        (dropped once seen done): an Ongoing record is answered only after it."""
        self._closed = False
        topic = host.topics.get(TRANSACTION_STATE_TOPIC_NAME)
        self.num_partitions: int | None = None if topic is None else topic.partitions

    # -- the topic --------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """``__transaction_state`` exists and was replayed."""
        return self.num_partitions is not None

    def replication_error(self) -> str | None:
        """Kafka's refusal when the configured replication factor exceeds our one node."""
        raw = self._host.config.source.get(REPLICATION_FACTOR_KEY)
        try:
            factor = int(str(raw).strip()) if raw is not None else 1
        except ValueError:
            factor = 1
        if factor > 1:
            return (
                f"{TRANSACTION_STATE_TOPIC_NAME} needs {REPLICATION_FACTOR_KEY}={factor}"
                " brokers, 1 is alive"
            )
        return None

    async def ensure_topic(self) -> None:
        """Create ``__transaction_state`` (first use) off the loop; concurrent callers share
        one creation.  Raises CoordinatorNotAvailableError (replication factor, closing)."""
        if self._closed:
            raise CoordinatorNotAvailableError("the transaction coordinator is shutting down")
        if self.ready:
            return
        problem = self.replication_error()
        if problem is not None:
            raise CoordinatorNotAvailableError(problem)
        if self._creating is None:
            self._creating = asyncio.ensure_future(self._create())
        await asyncio.shield(self._creating)

    async def _create(self) -> None:
        topics = self._host.topics
        try:
            topic = topics.get(TRANSACTION_STATE_TOPIC_NAME)
            if topic is None:
                create = getattr(topics, "create_topic_async", None)
                if create is not None:
                    topic = await create(
                        TRANSACTION_STATE_TOPIC_NAME,
                        self.config.transaction_state_log_num_partitions,
                        configs=dict(TRANSACTION_STATE_TOPIC_CONFIGS),
                    )
                else:
                    topic = topics.create_topic(
                        TRANSACTION_STATE_TOPIC_NAME,
                        self.config.transaction_state_log_num_partitions,
                        configs=dict(TRANSACTION_STATE_TOPIC_CONFIGS),
                    )
                log.info(
                    "created %s with %d partitions", TRANSACTION_STATE_TOPIC_NAME, topic.partitions
                )
            self.num_partitions = topic.partitions
        finally:
            self._creating = None

    # -- start-up ---------------------------------------------------------------------
    def load(self, *, startup: bool = True) -> int:
        """Replay an existing ``__transaction_state`` into a fresh coordinator, then
        re-send the markers of every prepared transaction; returns the records read.

        ``startup=False`` is the reload after a failed append at runtime: the held
        TxnOffsetCommit offsets stay this service's own (the start-up replay's copy is
        stale: some settled since, others held since) and the start-up rule
        (:meth:`_abort_unlisted`) does not run -- every record this process appended is
        in the log it replays, so no transaction lost its Ongoing record, and the rule
        would abort (and fence) live ones on stale held offsets."""
        self.coordinator = TransactionCoordinator(self._new_producer_id, self.config)
        if startup:
            self._pending_offsets = dict(self._host.groups.replayed_txn_offsets)
        if self.num_partitions is None:
            return 0
        count = 0
        unflushed: dict[int, concurrent.futures.Future[None]] = {}
        for p in range(self.num_partitions):
            plog = self._host.topics.partition_log(TRANSACTION_STATE_TOPIC_NAME, p)
            count += self._replay_partition(plog)
            if plog.durable_acks and plog.flushed_offset < plog.log_end_offset:
                # read back from the page cache after a kill -9, perhaps never fsynced:
                # the next Ongoing record of these ids waits for it (see _append)
                unflushed[p] = plog.flush_future(plog.log_end_offset - 1)
        for transactional_id in self.coordinator.transactional_ids() if unflushed else ():
            fut = unflushed.get(partition_for(transactional_id, self.num_partitions))
            if fut is not None:
                self._undurable[transactional_id] = fut
        if count:
            log.info(
                "transaction coordinator loaded %d record(s) from %s",
                count,
                TRANSACTION_STATE_TOPIC_NAME,
            )
        self._handle(self.coordinator.recover(self._clock.now_ms()))
        if startup:
            self._abort_unlisted()
        self._rearm()
        if self._marker_waiters:
            self._wake()
        return count

    def open_transactions(self) -> list[OpenTransaction]:
        """Every transaction open in a partition's producer state (all topics but
        ``__transaction_state``; ``__consumer_offsets`` included), as rebuilt at start,
        plus the held TxnOffsetCommit offsets whose marker is not in the log (their batch
        is written without producer-state tracking, so a snapshot may not show it open)."""
        found: dict[tuple[TopicPartition, int], OpenTransaction] = {}
        topics = self._host.topics
        for topic in topics.topics():
            if topic.name == TRANSACTION_STATE_TOPIC_NAME:
                continue
            for p in range(topic.partitions):
                try:
                    plog = topics.partition_log(topic.name, p)
                except UnknownTopicOrPartitionError:
                    continue
                if not plog.ongoing_transactions():
                    continue
                tp = TopicPartition(topic.name, p)
                for entry in plog.producer_states():
                    if entry.current_txn_first_offset >= 0:
                        found[(tp, entry.producer_id)] = OpenTransaction(
                            tp, entry.producer_id, entry.producer_epoch
                        )
        for producer_id, p in list(self._pending_offsets):
            tp = TopicPartition(OFFSETS_TOPIC_NAME, p)
            if (tp, producer_id) not in found:
                found[(tp, producer_id)] = OpenTransaction(
                    tp, producer_id, self._offsets_epoch(producer_id, p)
                )
        return list(found.values())

    def _offsets_epoch(self, producer_id: int, partition: int) -> int:
        """The epoch of held offsets of ``producer_id``: the coordinator's current one
        when its transaction of that producer id lists the partition (the offsets are
        that transaction's: an earlier one's were settled by its markers), else the
        partition's producer entry, else the coordinator's current one for that producer
        id, else 0.  The producer entry may be older than the offsets (their batch is
        written without producer-state tracking; the entry may come from an earlier
        transaction's marker before an InitProducerId bump), so it must not decide for a
        listed transaction: the rule would abort its held offsets behind its back."""
        tp = TopicPartition(OFFSETS_TOPIC_NAME, partition)
        for transactional_id in self.coordinator.transactional_ids():
            meta = self.coordinator.transaction(transactional_id)
            if meta is not None and meta.producer_id == producer_id and tp in meta.partitions:
                return meta.producer_epoch
        try:
            plog = self._host.topics.partition_log(OFFSETS_TOPIC_NAME, partition)
        except UnknownTopicOrPartitionError:
            plog = None
        for entry in plog.producer_states() if plog is not None else ():
            if entry.producer_id == producer_id:
                return entry.producer_epoch
        for transactional_id in self.coordinator.transactional_ids():
            meta = self.coordinator.transaction(transactional_id)
            if meta is not None and meta.producer_id == producer_id:
                return meta.producer_epoch
        return 0

    def _abort_unlisted(self) -> None:
        """Start-up, after ``recover``: abort the open transactions the coordinator does
        not list (their Ongoing record was lost in a crash; see
        :mod:`riverbed.coordinator.transactions.orphans`).  Its PrepareAbort records are
        durable before its markers are written, as any abort's."""
        open_txns = self.open_transactions()
        if not open_txns:
            return
        reply = self.coordinator.abort_unlisted(open_txns, self._clock.now_ms())
        report = reply.response
        for transactional_id, partitions in sorted(report.fenced.items()):
            log.warning(
                "transaction of %s: %s held data its lost Ongoing record did not list;"
                " aborting the transaction (the producer is fenced)",
                transactional_id,
                ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(partitions)),
            )
        for txn in report.direct:
            log.warning(
                "%s-%d: transaction of producer %d epoch %d open with no coordinator"
                " transaction; aborting it",
                txn.partition.topic,
                txn.partition.partition,
                txn.producer_id,
                txn.producer_epoch,
            )
        self._handle(reply)

    def _replay_partition(self, plog: PartitionLog) -> int:
        offset, end, count = plog.log_start_offset, plog.log_end_offset, 0
        while offset < end:
            try:
                data = plog.read(offset, REPLAY_READ_BYTES).records
            except CorruptSegmentError as exc:
                log.error(
                    "transaction coordinator: %s replayed only up to offset %d: %s",
                    plog,
                    offset,
                    exc,
                )
                break
            if not data:
                break
            for header, records in iter_batches_with_records(data, allow_partial_tail=True):
                next_offset = header.base_offset + header.last_offset_delta + 1
                if next_offset <= offset:
                    continue
                if not header.is_control:
                    for record in records:
                        if record.offset >= offset and record.key is not None:
                            self.coordinator.replay(record.key, record.value)
                            count += 1
                offset = next_offset
        return count

    # -- calls ------------------------------------------------------------------------
    def execute(self, handler: Callable[[int], TxnReply[R]]) -> Executed[R]:
        """Run one coordinator call at ``now``: append its records, start its markers
        (after the records are durable), re-arm the timer.  Raises
        CoordinatorNotAvailableError before :meth:`ensure_topic` or while stopping."""
        if self._closed or not self.ready:
            raise CoordinatorNotAvailableError("the transaction coordinator is not available")
        return Executed(*self._handle(handler(self._clock.now_ms())))

    def now_ms(self) -> int:
        """The broker's clock (ListTransactions' duration filter)."""
        return self._clock.now_ms()

    def query(self, fn: Callable[[], R]) -> R:
        """A read-only call (DescribeTransactions, ListTransactions)."""
        if self._closed:
            raise CoordinatorClosedError("the transaction coordinator is shutting down")
        return fn()

    def preparing(self, transactional_id: str) -> bool:
        """Is ``transactional_id`` in PrepareCommit/PrepareAbort (its markers being written)?"""
        meta = self.coordinator.transaction(transactional_id)
        return meta is not None and meta.state.is_prepare

    async def markers_done(self, transactional_id: str, timeout_s: float) -> None:
        """Return once ``transactional_id`` has left PrepareCommit/PrepareAbort (its markers
        are written and the transaction completed), or after ``timeout_s``, or when the
        service reloads or closes.  A request the coordinator would answer
        CONCURRENT_TRANSACTIONS waits here and is then run again, instead of making its
        client back off (librdkafka waits 20 ms or more; the markers take a few ms)."""
        if not self.preparing(transactional_id) or self._closed:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._marker_waiters.setdefault(transactional_id, []).append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
        except TimeoutError:
            pass
        finally:
            waiters = self._marker_waiters.get(transactional_id, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self._marker_waiters.pop(transactional_id, None)

    def _wake(self, transactional_ids: Iterable[str] | None = None) -> None:
        """Release the :meth:`markers_done` waiters of ``transactional_ids`` (None: all)."""
        ids = list(self._marker_waiters) if transactional_ids is None else transactional_ids
        for transactional_id in ids:
            for waiter in self._marker_waiters.pop(transactional_id, []):
                if not waiter.done():
                    waiter.set_result(None)

    def _handle(self, reply: TxnReply[R]) -> tuple[R, tuple[concurrent.futures.Future[None], ...]]:
        flushes = self._append(reply.records)
        if reply.markers:
            self._spawn(self._write_markers(reply.markers, flushes))
        if reply.records:  # every state change writes a record: else no deadline moved
            self._rearm()  # (next_deadline_ms scans every id: not once per Produce)
        return reply.response, flushes

    def verify_produce(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        implicit_add: bool,
        produce_version: int,
    ) -> ProduceVerdict:
        """Check a transactional Produce (KIP-890): each partition must be in the ongoing
        transaction of ``producer_id``/``producer_epoch``; ``implicit_add`` (Produce v12+,
        transaction version 2) adds it instead, as a partition leader's
        AddPartitionsToTxn v5 would (its Ongoing record is appended now, not waited for;
        the returned flushes are those of the id's previous decision if it is not durable
        yet, which the data must wait for before it is appended).  Codes as Kafka's
        produce answers them: not in the transaction TRANSACTION_ABORTABLE
        (INVALID_TXN_STATE below Produce v11), a coordinator that is busy or unavailable
        NOT_ENOUGH_REPLICAS (retriable), a fenced epoch INVALID_PRODUCER_EPOCH."""
        tps = frozenset(partitions)
        req = AddPartitionsToTxnRequest(
            transactional_id,
            producer_id,
            producer_epoch,
            tps,
            verify_only=not implicit_add,
            transaction_version=TV_2 if implicit_add else 0,
        )
        try:
            executed = self.execute(lambda now: self.coordinator.add_partitions_to_txn(req, now))
        except CoordinatorNotAvailableError:
            return ProduceVerdict(dict.fromkeys(tps, ErrorCode.NOT_ENOUGH_REPLICAS))
        errors = {
            tp: _produce_code(code, produce_version)
            for tp, code in executed.response.errors.items()
        }
        return ProduceVerdict(errors, executed.flushes)

    def add_pending_offsets(
        self, producer_id: int, producer_epoch: int, group_id: str, offsets: Iterable[PendingOffset]
    ) -> tuple[concurrent.futures.Future[None], ...]:
        """Write a TxnOffsetCommit's offsets to the group's ``__consumer_offsets``
        partition as one transactional batch of ``producer_id`` (Kafka's format: ordinary
        offset records) and hold them until the transaction's marker there: COMMIT
        applies them (replay applies them at the marker too), ABORT drops them.  Returns
        the fsyncs the answer waits for (durable flush policy)."""
        if self._host.topics.get(OFFSETS_TOPIC_NAME) is None:  # no FindCoordinator first
            raise CoordinatorNotAvailableError(f"{OFFSETS_TOPIC_NAME} does not exist yet")
        p = partition_for(group_id, self._offsets_partitions())
        now = self._clock.now_ms()
        records = [
            offset_commit_record(
                o.group_id,
                o.topic,
                o.partition,
                OffsetCommitValue(o.offset, o.leader_epoch, o.metadata, now),
            )
            for o in offsets
        ]
        if not records:
            return ()
        plog = self._host.topics.partition_log(OFFSETS_TOPIC_NAME, p)
        batch = build_batch(
            [(r.key, r.value) for r in records],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            is_transactional=True,
            clock=self._clock,
        )
        result = plog.append(batch, check_producer=False)
        self._host.purgatory.notify(TopicPartition(OFFSETS_TOPIC_NAME, p))
        self._pending_offsets.setdefault((producer_id, p), []).extend(
            (r.key, r.value) for r in records
        )
        return (plog.flush_future(result.last_offset),) if plog.durable_acks else ()

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        """Partitions of ``group_id`` with a transactional offset waiting for its marker
        (OffsetFetch with ``require_stable`` answers them UNSTABLE_OFFSET_COMMIT)."""
        p = partition_for(group_id, self._offsets_partitions())
        out: set[TopicPartition] = set()
        for (_pid, partition), held in self._pending_offsets.items():
            if partition != p:
                continue
            for key, _value in held:
                decoded = decode_key(key)
                if isinstance(decoded, OffsetCommitKey) and decoded.group == group_id:
                    out.add(TopicPartition(decoded.topic, decoded.partition))
        return out

    def _offsets_partitions(self) -> int:
        topic = self._host.topics.get(OFFSETS_TOPIC_NAME)
        return self.config.offsets_topic_num_partitions if topic is None else topic.partitions

    def _append(
        self, records: Iterable[TransactionRecord]
    ) -> tuple[concurrent.futures.Future[None], ...]:
        """Append ``records`` (one batch per ``__transaction_state`` partition) and return
        the fsyncs the answer must wait for.

        A record with ``answer_waits`` (Empty, PrepareX, CompleteX, tombstones): its own
        fsync.  An Ongoing record: none of its own (the flusher makes it durable with
        the next group commit, see :mod:`riverbed.coordinator.transactions.orphans`),
        but the fsync of its id's last waited record if that is not durable yet --
        typically the previous transaction's CompleteCommit, appended by the marker task
        just before.  So when an Ongoing record is answered (and the client may write
        data), every earlier decision of its id is durable: a crash can lose the new
        transaction's registration (repaired at start-up) but never replay the id back
        to PrepareX, whose re-sent markers would close the new transaction's data."""
        by_partition: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
        by_partition_ids: dict[int, list[TransactionRecord]] = {}
        prerequisites: list[concurrent.futures.Future[None]] = []
        assert self.num_partitions is not None
        for record in records:
            p = partition_for(record.transactional_id, self.num_partitions)
            by_partition.setdefault(p, []).append((record.key, record.value))
            by_partition_ids.setdefault(p, []).append(record)
            if not record.answer_waits:
                before = self._undurable.get(record.transactional_id)
                if before is not None:
                    if before.done():
                        del self._undurable[record.transactional_id]
                    elif before not in prerequisites:
                        prerequisites.append(before)
        if not by_partition:
            return ()
        flushes: list[concurrent.futures.Future[None]] = []
        try:
            for p, items in sorted(by_partition.items()):
                plog = self._host.topics.partition_log(TRANSACTION_STATE_TOPIC_NAME, p)
                result = plog.append(build_batch(items, clock=self._clock), check_producer=False)
                self._host.purgatory.notify(TopicPartition(TRANSACTION_STATE_TOPIC_NAME, p))
                if plog.durable_acks:
                    flush = plog.flush_future(result.last_offset)  # requests the group commit
                    waited = [r for r in by_partition_ids[p] if r.answer_waits]
                    for record in waited:
                        self._undurable[record.transactional_id] = flush
                    if waited:
                        flushes.append(flush)
        except Exception:
            log.exception(
                "appending to %s failed; reloading the transaction coordinator",
                TRANSACTION_STATE_TOPIC_NAME,
            )
            self.load(startup=False)
            raise
        if len(self._undurable) > UNDURABLE_PRUNE_AT:
            self._undurable = {t: f for t, f in self._undurable.items() if not f.done()}
        return tuple(prerequisites + flushes)

    # -- markers ----------------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write_markers(
        self, markers: Iterable[MarkerRequest], after: Iterable[concurrent.futures.Future[None]]
    ) -> None:
        """Wait for the Prepare record, then write and complete every marker request.

        The EndTxn answer waits for the same fsync; this task registered on it first, so
        it would wake first and append every marker before that answer is sent.  It
        yields to the loop twice (the answer's task finishing, then its done callback
        writing the answer) so the client hears of its durable PrepareCommit first, as
        Kafka answers EndTxn before its markers are written."""
        try:
            for fut in after:
                await asyncio.wrap_future(fut)
        except Exception as exc:
            log.error(
                "%s flush failed; markers wait for a restart: %s", TRANSACTION_STATE_TOPIC_NAME, exc
            )
            return
        for _ in range(ANSWER_FIRST_YIELDS):
            await asyncio.sleep(0)
        for marker in markers:
            await self._write_marker(marker)

    async def _write_marker(self, marker: MarkerRequest) -> None:
        written: list[TopicPartition] = []
        flushes: list[concurrent.futures.Future[None]] = []
        failed = False
        commit = marker.result is TransactionResult.COMMIT
        for tp in sorted(marker.partitions):
            if self._closed:
                return
            try:
                flush = self._write_one(marker, tp, commit)
            except UnknownTopicOrPartitionError:
                written.append(tp)  # the topic is gone: nothing to mark (as Kafka)
                continue
            except Exception as exc:
                if error_code_for(exc) in (
                    ErrorCode.INVALID_PRODUCER_EPOCH,
                    ErrorCode.PRODUCER_FENCED,
                    ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                ):
                    log.warning(
                        "marker for %s in %s refused, skipped: %s", marker.transactional_id, tp, exc
                    )
                    written.append(tp)
                else:
                    log.error(
                        "marker for %s in %s failed, will retry: %s",
                        marker.transactional_id,
                        tp,
                        exc,
                    )
                    failed = True
                continue
            written.append(tp)
            if flush is not None:
                flushes.append(flush)
        try:
            for fut in flushes:
                await asyncio.wrap_future(fut)
        except Exception as exc:
            log.error("marker flush failed for %s, will retry: %s", marker.transactional_id, exc)
            self._retry_markers_later()
            return
        if self._closed:
            return
        records = self.coordinator.markers_written(
            marker.transactional_id,
            marker.producer_id,
            marker.producer_epoch,
            written,
            self._clock.now_ms(),
        )
        try:
            flushes_done = self._append(records)
            if records:  # complete (in memory and appended): the next request may run
                self._wake((marker.transactional_id,))
            for fut in flushes_done:
                await asyncio.wrap_future(fut)
        except Exception:
            log.exception("completing %s failed", marker.transactional_id)
        if failed:
            self._retry_markers_later()
        self._rearm()

    def _write_one(
        self, marker: MarkerRequest, tp: TopicPartition, commit: bool
    ) -> concurrent.futures.Future[None] | None:
        if tp.topic == OFFSETS_TOPIC_NAME and self._host.topics.get(tp.topic) is None:
            return None  # AddOffsetsToTxn, then no TxnOffsetCommit: nothing there to mark
        plog = self._host.topics.partition_log(tp.topic, tp.partition)
        result = plog.append_control_marker(
            marker.producer_id, marker.producer_epoch, commit, marker.coordinator_epoch
        )
        self._host.purgatory.notify(tp)
        if tp.topic == OFFSETS_TOPIC_NAME:
            self._settle_offsets(marker.producer_id, tp.partition, commit)
        return plog.flush_future(result.last_offset) if plog.durable_acks else None

    def _settle_offsets(self, producer_id: int, partition: int, commit: bool) -> None:
        """Commit (or drop) the pending TxnOffsetCommit offsets of ``producer_id`` held for
        ``__consumer_offsets`` partition ``partition``."""
        held = self._pending_offsets.pop((producer_id, partition), [])
        if not commit:
            return
        coordinator = self._host.groups.coordinator
        for key, value in held:  # in the log already: replay applies them at the marker
            try:
                coordinator.replay(key, value)
            except RiverbedError as exc:
                log.error("transactional offset of producer %d not applied: %s", producer_id, exc)

    def _retry_markers_later(self) -> None:
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        loop.call_later(MARKER_RETRY_S, self._retry_markers)

    def _retry_markers(self) -> None:
        if self._closed:
            return
        outstanding = self.coordinator.outstanding_markers()
        if outstanding:
            self._spawn(self._write_markers(outstanding, ()))

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
        if self._closed or not self.ready:
            return
        try:
            self._handle(self.coordinator.tick(self._clock.now_ms()))
        except Exception:
            log.exception("transaction coordinator timer failed")
        self._rearm()

    # -- shutdown ---------------------------------------------------------------------
    def close(self) -> None:
        """Stop the timers and marker writers (broker stop).  Markers not yet written
        are re-sent by :meth:`load` at the next start."""
        self._closed = True
        if self._marker_waiters:
            self._wake()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in list(self._tasks):
            task.cancel()


def topic_partitions(topics: Mapping[str, Iterable[int]]) -> frozenset[TopicPartition]:
    """``{topic: [partition, ...]}`` as a frozenset of TopicPartition."""
    return frozenset(TopicPartition(t, p) for t, ps in topics.items() for p in ps)
