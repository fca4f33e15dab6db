"""In-memory fakes of the services handlers depend on (``riverbed.broker.handlers.deps``).

Each fake keeps only what a handler's decision needs: a :class:`FakeLog` stores opaque
"batches" as ``(offset, bytes)`` with a settable high watermark and log start, a
:class:`FakeTopics` maps names and ids to :class:`Topic` values and logs, and raises
Kafka's errors as the real topic manager does.  No sockets, no disk, no threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from riverbed.broker.barrier import Barrier
from riverbed.broker.config import BrokerConfig
from riverbed.broker.context import RequestContext
from riverbed.broker.groups import CoordinatorClosedError, Executed
from riverbed.broker.handlers import deps
from riverbed.broker.purgatory import FetchPurgatory
from riverbed.broker.topics import ConfigChange, Topic
from riverbed.broker.transactions import CoordinatorNotAvailableError, PendingOffset, ProduceVerdict
from riverbed.coordinator import Pending, Reply
from riverbed.coordinator.transactions import TransactionCoordinator, TxnReply
from riverbed.errors import (
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.storage.config import LogConfig
from riverbed.storage.log import AppendResult, FetchResult
from riverbed.storage.transactions import IsolationLevel


def ctx(api_key: int, version: int, client_address: str | None = None) -> RequestContext:
    return RequestContext(RequestHeader(api_key, version, 1, "unit"), client_address)


def done_future(exc: BaseException | None = None) -> concurrent.futures.Future[None]:
    fut: concurrent.futures.Future[None] = concurrent.futures.Future()
    if exc is None:
        fut.set_result(None)
    else:
        fut.set_exception(exc)
    return fut


class FakeLog:
    """A partition log in memory: each append is one batch covering one offset."""

    def __init__(self, log_start_offset: int = 0) -> None:
        self.log_start_offset = log_start_offset
        self.batches: list[tuple[int, bytes]] = []
        self.append_error: Exception | None = None
        self.flush: concurrent.futures.Future[None] | None = None  # None: resolved at once
        self.flushes_asked: list[int] = []
        self.timestamps: dict[int, tuple[int, int]] = {}
        self.read_error: Exception | None = None

    @property
    def high_watermark(self) -> int:
        return self.batches[-1][0] + 1 if self.batches else self.log_start_offset

    def append(self, records: bytes | bytearray | memoryview) -> AppendResult:
        if self.append_error is not None:
            raise self.append_error
        offset = self.high_watermark
        self.batches.append((offset, bytes(records)))
        return AppendResult(offset, offset, -1, self.log_start_offset)

    def flush_future(self, offset: int) -> concurrent.futures.Future[None]:
        self.flushes_asked.append(offset)
        return self.flush if self.flush is not None else done_future()

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark  # no transactions in the fake

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool = True,
        isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    ) -> FetchResult:
        if self.read_error is not None:
            raise self.read_error
        if not self.log_start_offset <= offset <= self.high_watermark:
            raise OffsetOutOfRangeError(f"offset {offset} out of range")
        out = b""
        for base, data in self.batches:
            if base < offset:
                continue
            if len(out) + len(data) > max_bytes and not (min_one_batch and not out):
                break
            out += data
        hw = self.high_watermark
        aborted = () if isolation is IsolationLevel.READ_COMMITTED else None
        return FetchResult(out, hw, self.log_start_offset, hw, hw, aborted)

    def segments(self) -> list[Any]:
        return []

    def offset_for_timestamp(
        self, ts_ms: int, *, isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    ) -> tuple[int, int] | None:
        found = [v for t, v in sorted(self.timestamps.items()) if t >= ts_ms]
        return found[0] if found else None

    def delete_records_before(self, offset: int) -> int:
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(f"offset {offset} is above the high watermark")
        self.log_start_offset = max(self.log_start_offset, offset)
        return self.log_start_offset


class FakeTopics:
    """The topic table: names, ids, partition logs and (scripted) topic changes."""

    def __init__(self) -> None:
        self._topics: dict[str, Topic] = {}
        self.logs: dict[tuple[str, int], FakeLog] = {}
        self.auto_create = False
        self.auto_created: list[tuple[str, object]] = []  # begin_auto_create's (name, create)
        self.created_later: list[str] = []
        self.errors: dict[str, Exception] = {}  # name -> what a change of it raises
        self.default_log_config = LogConfig()
        self.deleted: list[str] = []

    def add(self, name: str, partitions: int = 1, **configs: str) -> Topic:
        topic = Topic(name, uuid.uuid4(), partitions, dict(configs))
        self._topics[name] = topic
        for p in range(partitions):
            self.logs[(name, p)] = FakeLog()
        return topic

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self._topics.values() if t.topic_id == topic_id), None)

    def topics(self) -> list[Topic]:
        return list(self._topics.values())

    def partition_log(self, name: str, partition: int) -> FakeLog:
        plog = self.logs.get((name, partition))
        if plog is None:
            raise UnknownTopicOrPartitionError(
                f"this server does not host topic-partition {name}-{partition}"
            )
        return plog

    def log_config(self, overrides: Mapping[str, str]) -> LogConfig:
        return LogConfig.from_kafka_props(dict(overrides), self.default_log_config)

    def begin_auto_create(
        self, name: str, create: Callable[[], Coroutine[Any, Any, object]] | None = None
    ) -> bool:
        """Records the start; :meth:`finish_auto_creations` completes the plain ones
        ``errors`` does not name (the Metadata answering now never sees them)."""
        if not self.auto_create or name in self._topics:
            return False
        self.auto_created.append((name, create))
        if create is None and name not in self.errors:
            self.created_later.append(name)
        return True

    def finish_auto_creations(self) -> None:
        """The background creations started so far complete."""
        for name in self.created_later:
            self.add(name)
        self.created_later.clear()

    async def ensure_topic_async(self, name: str) -> Topic | None:
        if name in self.errors:
            raise self.errors[name]
        return self._topics.get(name) or self.add(name)

    async def create_topic_async(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic:
        if name in self.errors:
            raise self.errors[name]
        if name in self._topics:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        count = 1 if num_partitions == -1 else num_partitions
        if validate_only:
            return Topic(name, uuid.uuid4(), count, dict(configs or {}))
        return self.add(name, count, **dict(configs or {}))

    async def create_partitions_async(
        self, name: str, count: int, *, validate_only: bool = False
    ) -> Topic:
        if name in self.errors:
            raise self.errors[name]
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        if not validate_only:
            topic.partitions = count
        return topic

    def begin_delete_topic(self, name: str) -> asyncio.Future[Topic]:
        if name in self.errors:
            raise self.errors[name]
        topic = self._topics.pop(name, None)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        self.deleted.append(name)
        done: asyncio.Future[Topic] = asyncio.get_running_loop().create_future()
        done.set_result(topic)
        return done

    async def alter_configs_async(
        self, name: str, change: ConfigChange, *, validate_only: bool = False
    ) -> dict[str, str]:
        topic = self._topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        new = change(dict(topic.configs))
        if not validate_only:
            topic.configs = new
        return new


class RecordingPurgatory(FetchPurgatory):
    """The real purgatory (it is already in memory), recording notifications."""

    def __init__(self) -> None:
        super().__init__()
        self.notified: list[TopicPartition] = []
        self.notified_all = 0

    def notify(self, tp: TopicPartition) -> None:
        self.notified.append(tp)
        super().notify(tp)

    def notify_all(self) -> None:
        self.notified_all += 1
        super().notify_all()


class FakeCoordinator:
    """Records each coordinator call ``(method, request)`` and answers ``replies[method]``
    (a :class:`Reply` for calls that write, a plain value for queries)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.replies: dict[str, Any] = {}

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any) -> Any:
            self.calls.append((method, args[0] if args else None))
            return self.replies[method]

        return call


class FakeGroups:
    """The group service: runs calls at a fixed ``now``, returns scripted flushes,
    resolves Pending answers from ``deferred``; ``closed`` makes every call refuse,
    ``closed_on_wait`` only the waits (a stop during a rebalance)."""

    def __init__(self) -> None:
        self.coordinator: Any = FakeCoordinator()
        self.closed = False
        self.flushes: tuple[concurrent.futures.Future[None], ...] = ()
        self.deferred: dict[int, Any] = {}
        self.closed_on_wait = False  # the broker stops while an answer is awaited
        self.now_ms = 1_000
        self.ready = True  # __consumer_offsets exists

    async def ensure_topic(self) -> None:
        self.ready = True

    def execute(self, handler: Callable[[int], Reply[Any]]) -> Executed[Any]:
        if self.closed:
            raise CoordinatorClosedError("closed")
        return Executed(handler(self.now_ms).response, self.flushes)

    def query(self, fn: Callable[[], Any]) -> Any:
        if self.closed:
            raise CoordinatorClosedError("closed")
        return fn()

    async def wait(self, pending: Pending) -> Any:
        if self.closed or self.closed_on_wait:
            raise CoordinatorClosedError("closed")
        return self.deferred[pending.token]


R = TypeVar("R")


@dataclass
class FakeTransactions:
    """The transaction service over a real coordinator, without persistence;
    ``unavailable`` makes ``ensure_topic`` refuse as a too-large replication factor does."""

    unavailable: bool = False
    produce_code: ErrorCode = ErrorCode.NONE
    pending: list[tuple[int, str, PendingOffset]] = field(default_factory=list)
    verified: list[tuple[str, int, int, list[TopicPartition], bool]] = field(default_factory=list)
    coordinator: TransactionCoordinator = field(
        default_factory=lambda: TransactionCoordinator(iter(range(5000, 6000)).__next__)
    )

    async def ensure_topic(self) -> None:
        if self.unavailable:
            raise CoordinatorNotAvailableError("replication factor 3, 1 broker")

    def now_ms(self) -> int:
        return 1_000

    def execute(self, handler: Callable[[int], TxnReply[R]]) -> Executed[R]:
        return Executed(handler(self.now_ms()).response)

    def query(self, fn: Callable[[], R]) -> R:
        return fn()

    def add_pending_offsets(
        self, producer_id: int, producer_epoch: int, group_id: str, offsets: Iterable[PendingOffset]
    ) -> tuple[concurrent.futures.Future[None], ...]:
        self.pending.extend((producer_id, group_id, o) for o in offsets)
        return ()

    def unstable_offsets(self, group_id: str) -> set[TopicPartition]:
        return {TopicPartition(o.topic, o.partition) for _p, g, o in self.pending if g == group_id}

    def verify_produce(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        implicit_add: bool,
        produce_version: int,
    ) -> ProduceVerdict:
        self.verified.append(
            (transactional_id, producer_id, producer_epoch, sorted(partitions), implicit_add)
        )
        return ProduceVerdict(dict.fromkeys(partitions, self.produce_code))


class FakeShareState:
    async def ensure_topic(self) -> None:
        return None


@dataclass
class FakeShareGroups:
    """Only what Metadata needs: the share-state topic's creator."""

    partitions: FakeShareState = field(default_factory=FakeShareState)


@dataclass
class FakeBroker:
    """Satisfies every handler's deps protocol; each test uses the parts it needs."""

    topics: FakeTopics = field(default_factory=FakeTopics)
    groups: FakeGroups = field(default_factory=FakeGroups)
    transactions: FakeTransactions = field(default_factory=FakeTransactions)
    share_groups: FakeShareGroups = field(default_factory=FakeShareGroups)
    purgatory: RecordingPurgatory = field(default_factory=RecordingPurgatory)
    config: BrokerConfig = field(default_factory=lambda: BrokerConfig(node_id=7))
    closing: bool = False
    node_id: int = 7
    host: str = "broker.example"
    port: int = 19092
    cluster_id: str = "cluster-under-test"
    api_keys: list[int] = field(default_factory=lambda: [0, 1, 18])

    def served_api_keys(self) -> list[int]:
        return list(self.api_keys)


def answer(handler: Callable[..., Any], deps: Any, context: RequestContext, request: Any) -> Any:
    """Call ``handler`` on a fresh event loop (as the connection does: synchronously, on
    the loop) and wait for its answer, through a Barrier or an awaitable."""

    async def main() -> Any:
        result = handler(deps, context, request)
        if isinstance(result, Barrier):
            result = result.awaitable
        if isinstance(result, Awaitable):
            result = await result
        return result

    return asyncio.run(main())


def _fakes_have_the_declared_shapes(broker: FakeBroker) -> None:
    """Never called: mypy checks here that the fakes satisfy every deps protocol."""
    checks: list[object] = []
    produce_deps: deps.ProduceDeps = broker
    fetch_deps: deps.FetchDeps = broker
    offsets_deps: deps.ListOffsetsDeps = broker
    trim_deps: deps.DeleteRecordsDeps = broker
    metadata_deps: deps.MetadataDeps = broker
    versions_deps: deps.ApiVersionsDeps = broker
    admin_deps: deps.TopicAdminDeps = broker
    delete_deps: deps.DeleteTopicsDeps = broker
    group_deps: deps.GroupDeps = broker
    checks += [produce_deps, fetch_deps, offsets_deps, trim_deps, metadata_deps]
    checks += [versions_deps, admin_deps, delete_deps, group_deps]
