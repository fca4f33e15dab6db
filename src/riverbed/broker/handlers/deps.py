"""What each handler may touch: narrow, structural (``typing.Protocol``) dependencies.

A handler is ``handle(deps, ctx, request)``: ``deps`` is one of the ``*Deps`` protocols
below, naming only the services that API needs; ``ctx`` is the
:class:`~riverbed.broker.context.RequestContext` the connection built.  The
:class:`~riverbed.broker.server.Broker` satisfies every ``*Deps`` protocol structurally
(it has ``topics``, ``purgatory``, ``groups``, ``node_id`` ...), and
:func:`riverbed.broker.handlers.bind_handlers` binds it once at broker construction,
so mypy checks the Broker against each handler's protocol.  Unit tests pass in-memory
fakes of the same shape (``tests/unit/broker/handlers``).

The log protocols (:class:`AppendLog`, :class:`ReadLog`, :class:`OffsetsLog`,
:class:`TrimLog`) are the parts of :class:`~riverbed.storage.log.PartitionLog` each API
uses; :class:`PartitionLogs` is the topic table narrowed to the log kind a handler reads.

Every member is read from the event loop thread (handlers run there); a log's methods
are thread-safe, the topic table is not.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from riverbed.broker.topic_configs import ConfigTopics, ConfigView

if TYPE_CHECKING:
    from riverbed.broker.groups import Deferred, Executed
    from riverbed.broker.topics import ConfigChange, Topic
    from riverbed.broker.transactions import PendingOffset, ProduceVerdict
    from riverbed.coordinator import GroupCoordinator, Pending, Reply
    from riverbed.coordinator.transactions import TransactionCoordinator, TxnReply
    from riverbed.protocol.topic_partition import TopicPartition
    from riverbed.storage.log import AppendResult, FetchResult
    from riverbed.storage.producer_state import ProducerStateEntry
    from riverbed.storage.segment import LogSegment
    from riverbed.storage.transactions import IsolationLevel

R = TypeVar("R")
L_co = TypeVar("L_co", covariant=True)


# -- logs ---------------------------------------------------------------------------
class AppendLog(Protocol):
    """Produce's view of a partition log."""

    def append(self, records: bytes | bytearray | memoryview) -> AppendResult: ...

    def flush_future(self, offset: int) -> concurrent.futures.Future[None]: ...


class ReadLog(Protocol):
    """Fetch's view of a partition log (thread-safe: read off the loop too)."""

    @property
    def high_watermark(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool = True,
        isolation: IsolationLevel = ...,
    ) -> FetchResult: ...


class OffsetsLog(Protocol):
    """ListOffsets' view of a partition log."""

    @property
    def high_watermark(self) -> int: ...

    @property
    def log_start_offset(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    def segments(self) -> Sequence[LogSegment]: ...

    def offset_for_timestamp(
        self, ts_ms: int, *, isolation: IsolationLevel = ...
    ) -> tuple[int, int] | None: ...


class TrimLog(Protocol):
    """DeleteRecords' view of a partition log (``delete_records_before`` off the loop)."""

    @property
    def high_watermark(self) -> int: ...

    def delete_records_before(self, offset: int) -> int: ...


# -- topics -------------------------------------------------------------------------
class TopicNames(Protocol):
    """Topic metadata lookups (loop-only state)."""

    def get(self, name: str) -> Topic | None: ...

    def by_id(self, topic_id: uuid.UUID) -> Topic | None: ...

    def topics(self) -> list[Topic]: ...


class PartitionLogs(TopicNames, Protocol[L_co]):
    """Topic lookups plus one partition's log; raises UnknownTopicOrPartitionError."""

    def partition_log(self, name: str, partition: int) -> L_co: ...


class AutoCreate(TopicNames, Protocol):
    """Metadata's auto-creation: started in the background, never waited for
    (:meth:`~riverbed.broker.topics.TopicManager.begin_auto_create`)."""

    def begin_auto_create(
        self, name: str, create: Callable[[], Coroutine[Any, Any, object]] | None = None
    ) -> bool: ...


class TopicAdmin(TopicNames, ConfigTopics, Protocol):
    """Topic changes (CreateTopics, CreatePartitions, DeleteTopics, AlterConfigs), and
    the effective log configs CreateTopics describes."""

    def get(self, name: str) -> Topic | None: ...

    async def create_topic_async(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic: ...

    async def create_partitions_async(
        self, name: str, count: int, *, validate_only: bool = False
    ) -> Topic: ...

    def begin_delete_topic(self, name: str) -> asyncio.Future[Topic]: ...

    async def alter_configs_async(
        self, name: str, change: ConfigChange, *, validate_only: bool = False
    ) -> dict[str, str]: ...


# -- other services -----------------------------------------------------------------
class AppendListener(Protocol):
    """Wakes long-poll fetches after an append (the purgatory)."""

    def notify(self, tp: TopicPartition) -> None: ...


class FetchWaits(Protocol):
    """Where long-poll fetches wait (the purgatory)."""

    def watch(self, partitions: Iterable[TopicPartition]) -> asyncio.Future[None]: ...

    def unwatch(
        self, future: asyncio.Future[None], partitions: Iterable[TopicPartition]
    ) -> None: ...


class WakeAll(Protocol):
    """Wakes every long-poll fetch (topics deleted)."""

    def notify_all(self) -> None: ...


class FetchSettings(Protocol):
    @property
    def fetch_max_bytes(self) -> int: ...


class ProducerIdSource(Protocol):
    def init_producer(self, producer_id: int, producer_epoch: int) -> tuple[int, int]: ...


class GroupTopicPort(Protocol):
    """Creating ``__consumer_offsets`` on first use (FindCoordinator, TxnOffsetCommit)."""

    @property
    def ready(self) -> bool: ...

    async def ensure_topic(self) -> None: ...


class GroupsPort(GroupTopicPort, Protocol):
    """The group coordinator service (:class:`~riverbed.broker.groups.GroupService`)."""

    @property
    def coordinator(self) -> GroupCoordinator: ...

    def execute(self, handler: Callable[[int], Reply[R]]) -> Executed[R]: ...

    def query(self, fn: Callable[[], R]) -> R: ...

    async def wait(self, pending: Pending) -> Deferred: ...


class TransactionsPort(Protocol):
    """The transaction coordinator service
    (:class:`~riverbed.broker.transactions.TransactionService`)."""

    @property
    def coordinator(self) -> TransactionCoordinator: ...

    async def ensure_topic(self) -> None: ...

    def now_ms(self) -> int: ...

    def execute(self, handler: Callable[[int], TxnReply[R]]) -> Executed[R]: ...

    def query(self, fn: Callable[[], R]) -> R: ...

    def preparing(self, transactional_id: str) -> bool: ...

    async def markers_done(self, transactional_id: str, timeout_s: float) -> None: ...

    def add_pending_offsets(
        self,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        offsets: Iterable[PendingOffset],
    ) -> tuple[concurrent.futures.Future[None], ...]: ...


# -- per-handler dependencies -------------------------------------------------------
class ClusterInfo(Protocol):
    """This node: FindCoordinator, DescribeCluster, Metadata."""

    @property
    def node_id(self) -> int: ...

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...


class ProduceTransactions(Protocol):
    """Produce's view of the transaction service: KIP-890 verification of transactional
    batches (:meth:`~riverbed.broker.transactions.TransactionService.verify_produce`)."""

    def verify_produce(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        implicit_add: bool,
        produce_version: int,
    ) -> ProduceVerdict: ...

    def preparing(self, transactional_id: str) -> bool:
        """Is the id's previous transaction still writing its markers?"""
        ...

    async def markers_done(self, transactional_id: str, timeout_s: float) -> None:
        """Return once those markers are written, or after ``timeout_s``."""
        ...


class ProduceDeps(Protocol):
    @property
    def topics(self) -> PartitionLogs[AppendLog]: ...

    @property
    def transactions(self) -> ProduceTransactions: ...

    @property
    def purgatory(self) -> AppendListener: ...


class FetchDeps(Protocol):
    @property
    def topics(self) -> PartitionLogs[ReadLog]: ...

    @property
    def purgatory(self) -> FetchWaits: ...

    @property
    def config(self) -> FetchSettings: ...

    @property
    def closing(self) -> bool:
        """True once the broker is stopping: a waiting fetch answers at once."""
        ...


class ListOffsetsDeps(Protocol):
    @property
    def topics(self) -> PartitionLogs[OffsetsLog]: ...


class DeleteRecordsDeps(Protocol):
    @property
    def topics(self) -> PartitionLogs[TrimLog]: ...


class InternalTopic(Protocol):
    """A coordinator that creates its internal topic on first use (callers share one)."""

    async def ensure_topic(self) -> None: ...


class ShareStateTopic(Protocol):
    @property
    def partitions(self) -> InternalTopic: ...


class MetadataDeps(ClusterInfo, Protocol):
    """Metadata: topic lookups, auto-creation, and the coordinators that create the
    internal topics Metadata may auto-create."""

    @property
    def topics(self) -> AutoCreate: ...

    @property
    def groups(self) -> InternalTopic: ...

    @property
    def transactions(self) -> InternalTopic: ...

    @property
    def share_groups(self) -> ShareStateTopic: ...


class ApiVersionsDeps(Protocol):
    def served_api_keys(self) -> list[int]: ...


class TopicAdminDeps(ConfigView, Protocol):
    """CreateTopics (describes the new topic's configs), CreatePartitions, AlterConfigs."""

    @property
    def topics(self) -> TopicAdmin: ...


class DeleteTopicsDeps(Protocol):
    @property
    def topics(self) -> TopicAdmin: ...

    @property
    def purgatory(self) -> WakeAll: ...


class ProducerIdDeps(Protocol):
    @property
    def producer_ids(self) -> ProducerIdSource: ...


class StableOffsets(Protocol):
    """Pending transactional offsets (the transaction service), for ``require_stable``."""

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]: ...


class OffsetFetchDeps(Protocol):
    """OffsetFetch: the group coordinator, topic ids, and pending transactional offsets."""

    @property
    def groups(self) -> GroupsPort: ...

    @property
    def topics(self) -> TopicNames: ...

    @property
    def transactions(self) -> StableOffsets: ...


class GroupDeps(Protocol):
    """The group APIs: the coordinator, and topic names/ids for the adapters' mapping."""

    @property
    def groups(self) -> GroupsPort: ...

    @property
    def topics(self) -> TopicNames: ...


class FindCoordinatorDeps(ClusterInfo, Protocol):
    """FindCoordinator: this node, and the group and transaction coordinators' topics."""

    @property
    def transactions(self) -> TransactionsPort: ...

    @property
    def groups(self) -> GroupTopicPort: ...


class TransactionDeps(Protocol):
    """The transaction APIs: the coordinator service and topic lookups."""

    @property
    def transactions(self) -> TransactionsPort: ...

    @property
    def topics(self) -> TopicNames: ...


class InitProducerIdDeps(ProducerIdDeps, Protocol):
    @property
    def transactions(self) -> TransactionsPort: ...


class DescribeProducersDeps(Protocol):
    @property
    def topics(self) -> PartitionLogs[ProducerStatesLog]: ...


class ReassignmentDeps(Protocol):
    """Alter/ListPartitionReassignments: this node's id and topic lookups."""

    @property
    def node_id(self) -> int: ...

    @property
    def topics(self) -> TopicNames: ...


class ProducerStatesLog(Protocol):
    """DescribeProducers' view of a partition log."""

    @property
    def producers(self) -> ProducerStates: ...

    def producer_states(self) -> list[ProducerStateEntry]:
        """A consistent copy of the producer state, taken under the log's lock."""
        ...


class ProducerStates(Protocol):
    @property
    def entries(self) -> Mapping[int, ProducerStateEntry]: ...
