"""TransactionService on a real topic table: ``__transaction_state`` created on first use
(and refused with a replication factor above one node), markers written after EndTxn, and
a restart between PrepareCommit and the markers completing the commit by replay."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _txn_service_host import PROPS, GroupsHost, Host, until

from riverbed.broker.config import BrokerConfig
from riverbed.broker.groups import OFFSETS_TOPIC_CONFIGS, GroupService
from riverbed.broker.topics import TopicManager
from riverbed.broker.transactions import (
    CoordinatorNotAvailableError,
    PendingOffset,
    TransactionService,
)
from riverbed.coordinator import (
    OFFSETS_TOPIC_NAME,
    TRANSACTION_STATE_TOPIC_NAME,
    OffsetFetchRequest,
)
from riverbed.coordinator.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TransactionCoordinatorConfig,
    TransactionState,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.record_build import build_batch
from riverbed.protocol.topic_partition import TopicPartition

TXN_CONFIG = TransactionCoordinatorConfig(
    transaction_state_log_num_partitions=4, offsets_topic_num_partitions=3
)


@pytest.fixture
def make_host(tmp_path: Path) -> Iterator[Callable[..., Host]]:
    from riverbed.storage.manager import LogManager

    opened: list[tuple[TopicManager, LogManager]] = []

    def make(**extra: str) -> Host:
        """A host on the data dir; the previous one is closed first (a restart)."""
        while opened:
            topics, logs = opened.pop()
            topics.close()
            logs.close()
        props = {**PROPS, **extra}
        config = BrokerConfig.from_props(props)
        logs = LogManager(tmp_path, start_background=False)
        topics = TopicManager(tmp_path, logs, config)
        opened.append((topics, logs))
        if topics.get(OFFSETS_TOPIC_NAME) is None:
            topics.create_topic(OFFSETS_TOPIC_NAME, 3, configs=dict(OFFSETS_TOPIC_CONFIGS))
        if topics.get("t") is None:
            topics.create_topic("t", 1)
        groups = GroupService(GroupsHost(topics, config))
        return Host(topics, groups, config)

    yield make
    for topics, logs in opened:
        topics.close()
        logs.close()


def _service(host: Host) -> TransactionService:
    ids = itertools.count(1000)
    return TransactionService(host, lambda: next(ids), TXN_CONFIG)


def test_topic_is_created_on_first_use(make_host: Callable[..., Host]) -> None:
    host = make_host()

    async def scenario() -> None:
        service = _service(host)
        service.load()
        assert not service.ready and host.topics.get(TRANSACTION_STATE_TOPIC_NAME) is None
        with pytest.raises(CoordinatorNotAvailableError):
            service.execute(
                lambda now: service.coordinator.init_producer_id(
                    InitProducerIdRequest("tx", 60_000), now
                )
            )
        await service.ensure_topic()
        topic = host.topics.get(TRANSACTION_STATE_TOPIC_NAME)
        assert topic is not None and topic.partitions == 4
        assert topic.configs.get("cleanup.policy") == "compact"
        service.close()

    asyncio.run(scenario())


def test_replication_factor_above_one_refuses_the_topic(make_host: Callable[..., Host]) -> None:
    host = make_host(**{"transaction.state.log.replication.factor": "3"})

    async def scenario() -> None:
        service = _service(host)
        with pytest.raises(CoordinatorNotAvailableError, match=r"replication\.factor=3"):
            await service.ensure_topic()
        assert host.topics.get(TRANSACTION_STATE_TOPIC_NAME) is None

    asyncio.run(scenario())


def _begin(host: Host, service: TransactionService) -> tuple[int, int]:
    init = service.execute(
        lambda now: service.coordinator.init_producer_id(InitProducerIdRequest("tx", 60_000), now)
    ).response
    pid, epoch = init.producer_id, init.producer_epoch
    added = service.execute(
        lambda now: service.coordinator.add_partitions_to_txn(
            AddPartitionsToTxnRequest("tx", pid, epoch, frozenset({TopicPartition("t", 0)})), now
        )
    ).response
    assert dict(added.errors) == {TopicPartition("t", 0): ErrorCode.NONE}
    host.topics.partition_log("t", 0).append(
        build_batch(
            [(None, b"v")],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            is_transactional=True,
        )
    )
    return pid, epoch


def test_commit_writes_markers_then_completes(make_host: Callable[..., Host]) -> None:
    host = make_host()

    async def scenario() -> None:
        service = _service(host)
        await service.ensure_topic()
        pid, epoch = _begin(host, service)
        plog = host.topics.partition_log("t", 0)
        assert plog.last_stable_offset == 0
        ended = service.execute(
            lambda now: service.coordinator.end_txn(
                EndTxnRequest("tx", pid, epoch, committed=True), now
            )
        )
        assert ended.response.error_code == ErrorCode.NONE
        meta = service.coordinator.transaction("tx")
        assert meta is not None
        await until(lambda: meta.state is TransactionState.COMPLETE_COMMIT)
        assert plog.log_end_offset == 2 and plog.last_stable_offset == 2
        service.close()

    asyncio.run(scenario())


def test_end_txn_is_answered_before_the_markers_are_written(
    make_host: Callable[..., Host],
) -> None:
    """The EndTxn answer and the marker writer wait for the same PrepareCommit fsync; the
    answer (a task whose done callback writes it, as the connection does) goes first."""
    host = make_host()

    async def scenario() -> None:
        service = _service(host)
        await service.ensure_topic()
        pid, epoch = _begin(host, service)
        plog = host.topics.partition_log("t", 0)
        ended = service.execute(
            lambda now: service.coordinator.end_txn(
                EndTxnRequest("tx", pid, epoch, committed=True), now
            )
        )

        async def answer() -> None:  # the handler's coroutine (txn_common._after_flush)
            for fut in ended.flushes:
                await asyncio.wrap_future(fut)

        end_at_answer: list[int] = []
        task = asyncio.ensure_future(answer())
        task.add_done_callback(lambda _t: end_at_answer.append(plog.log_end_offset))
        meta = service.coordinator.transaction("tx")
        assert meta is not None
        await until(lambda: meta.state is TransactionState.COMPLETE_COMMIT)
        assert end_at_answer == [1]  # the data batch only: no COMMIT marker yet
        assert plog.log_end_offset == 2
        service.close()

    asyncio.run(scenario())


def test_restart_after_prepare_commit_completes_the_commit(make_host: Callable[..., Host]) -> None:
    host = make_host()

    async def first_run() -> None:
        service = _service(host)
        await service.ensure_topic()
        pid, epoch = _begin(host, service)
        ended = service.execute(
            lambda now: service.coordinator.end_txn(
                EndTxnRequest("tx", pid, epoch, committed=True), now
            )
        )
        for fut in ended.flushes:
            await asyncio.wrap_future(fut)
        service.close()  # before the marker task ran: PrepareCommit is all the log has

    asyncio.run(first_run())
    plog = host.topics.partition_log("t", 0)
    assert plog.log_end_offset == 1 and plog.last_stable_offset == 0

    async def second_run() -> None:
        service = _service(host)
        service.load()  # replay, then recover() re-sends the markers
        meta = service.coordinator.transaction("tx")
        assert meta is not None
        await until(lambda: meta.state is TransactionState.COMPLETE_COMMIT)
        assert plog.last_stable_offset == plog.log_end_offset == 2
        service.close()

    asyncio.run(second_run())


def _committed(host: Host) -> list[tuple[str, int, int]]:
    answer = host.groups.coordinator.offset_fetch(OffsetFetchRequest("g"))
    return [(p.topic, p.partition, p.committed_offset) for p in answer.partitions]


def test_offsets_of_a_prepared_commit_are_applied_after_a_restart(
    make_host: Callable[..., Host],
) -> None:
    host = make_host()

    async def first_run() -> None:
        host.groups.load()
        service = _service(host)
        await service.ensure_topic()
        pid, epoch = _begin(host, service)
        added = service.execute(
            lambda now: service.coordinator.add_offsets_to_txn(
                AddOffsetsToTxnRequest("tx", pid, epoch, "g"), now
            )
        )
        assert added.response.error_code == ErrorCode.NONE
        flushes = service.add_pending_offsets(
            pid, epoch, "g", [PendingOffset("g", "t", 0, 42, -1, "")]
        )
        for fut in flushes:
            await asyncio.wrap_future(fut)
        assert _committed(host) == []
        ended = service.execute(
            lambda now: service.coordinator.end_txn(
                EndTxnRequest("tx", pid, epoch, committed=True), now
            )
        )
        for fut in ended.flushes:
            await asyncio.wrap_future(fut)
        service.close()  # no marker written yet

    asyncio.run(first_run())
    restarted = make_host()

    async def second_run() -> None:
        restarted.groups.load()
        assert _committed(restarted) == []  # no marker in __consumer_offsets yet
        assert list(restarted.groups.replayed_txn_offsets.values()) != []
        service = _service(restarted)
        service.load()
        meta = service.coordinator.transaction("tx")
        assert meta is not None
        await until(lambda: meta.state is TransactionState.COMPLETE_COMMIT)
        assert _committed(restarted) == [("t", 0, 42)]
        service.close()
        restarted.groups.load()  # replay alone now finds the marker
        assert _committed(restarted) == [("t", 0, 42)]

    asyncio.run(second_run())
