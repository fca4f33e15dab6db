"""What a TransactionService answer waits for (a real group-commit flusher; the fsyncs of
``__transaction_state`` blocked with the ``segment.fsync`` failure point):

* an Ongoing record (AddPartitionsToTxn) is answered once appended: no fsync of its own;
* but not before its id's earlier decision is durable: an Ongoing record appended while
  the id's Empty record (InitProducerId) is still unsynced waits for that fsync;
* decisions (Empty, PrepareCommit) wait for their own fsync, as before;
* and at load, a transaction open in a data partition that no coordinator transaction
  lists is aborted (a direct ABORT marker), but held TxnOffsetCommit offsets of a listed
  transaction are not (whatever epoch an earlier marker left in the partition).

On the code before the change the first check fails (the answer waited for the Ongoing
record's fsync)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _txn_service_host import PROPS, GroupsHost, Host, until

from riverbed.broker.config import BrokerConfig
from riverbed.broker.groups import OFFSETS_TOPIC_CONFIGS, GroupService
from riverbed.broker.topics import TopicManager
from riverbed.broker.transactions import PendingOffset, TransactionService
from riverbed.coordinator import OFFSETS_TOPIC_NAME
from riverbed.coordinator.partitioning import partition_for
from riverbed.coordinator.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TransactionCoordinatorConfig,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.record_build import build_batch
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.storage import faults
from riverbed.storage.manager import LogManager
from riverbed.storage.transactions import IsolationLevel

TXN_CONFIG = TransactionCoordinatorConfig(
    transaction_state_log_num_partitions=1, offsets_topic_num_partitions=3
)
T0 = TopicPartition("t", 0)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    config = BrokerConfig.from_props(PROPS)
    logs = LogManager(tmp_path)  # with its flusher thread: fsyncs happen off the caller
    topics = TopicManager(tmp_path, logs, config)
    topics.create_topic(OFFSETS_TOPIC_NAME, 3, configs=dict(OFFSETS_TOPIC_CONFIGS))
    topics.create_topic("t", 1)
    yield Host(topics, GroupService(GroupsHost(topics, config)), config)
    topics.close()
    logs.close()


def test_ongoing_answered_unsynced_but_after_the_ids_earlier_decision(host: Host) -> None:
    async def scenario() -> None:
        ids = itertools.count(1000)
        service = TransactionService(host, lambda: next(ids), TXN_CONFIG)
        service.load()
        await service.ensure_topic()
        init = service.execute(
            lambda now: service.coordinator.init_producer_id(
                InitProducerIdRequest("tx", 60_000), now
            )
        )
        assert len(init.flushes) == 1  # a decision: the answer waits for its fsync
        for fut in init.flushes:
            await asyncio.wrap_future(fut)
        pid = init.response.producer_id

        def add(txn_id: str, producer_id: int) -> tuple[object, ...]:
            req = AddPartitionsToTxnRequest(txn_id, producer_id, 0, frozenset({T0}))
            executed = service.execute(
                lambda now: service.coordinator.add_partitions_to_txn(req, now)
            )
            assert executed.response.errors == {T0: ErrorCode.NONE}
            return executed.flushes

        with faults.inject("segment.fsync", block=True, match="__transaction_state") as fault:
            assert add("tx", pid) == ()  # appended, answered: its fsync is not waited for

            other = service.execute(
                lambda now: service.coordinator.init_producer_id(
                    InitProducerIdRequest("other", 60_000), now
                )
            )
            [empty_synced] = other.flushes  # blocked: the Empty record is not durable
            assert not empty_synced.done()
            [waits_for] = add("other", other.response.producer_id)
            assert waits_for is empty_synced  # the earlier decision first, then the answer

            end = service.execute(
                lambda now: service.coordinator.end_txn(EndTxnRequest("tx", pid, 0, True), now)
            )
            assert len(end.flushes) == 1 and not end.flushes[0].done()
            fault.release()
            for fut in (empty_synced, *end.flushes):
                await asyncio.wait_for(asyncio.wrap_future(fut), 30)
        service.close()

    asyncio.run(scenario())


def test_load_aborts_a_transaction_no_coordinator_lists(host: Host) -> None:
    # a producer's transactional batch in t-0 that no transaction of the coordinator lists
    # (its Ongoing record lost): load() writes an ABORT marker and the LSO reaches the end
    plog = host.topics.partition_log("t", 0)
    plog.append(
        build_batch([(None, b"orphan")], producer_id=77, producer_epoch=3, is_transactional=True)
    )
    assert plog.last_stable_offset == 0

    async def scenario() -> None:
        ids = itertools.count(1000)
        service = TransactionService(host, lambda: next(ids), TXN_CONFIG)
        await service.ensure_topic()  # __transaction_state exists, nothing in it
        service.load()
        await until(
            lambda: plog.last_stable_offset == plog.high_watermark, "the orphan was never aborted"
        )
        service.close()

    asyncio.run(scenario())
    assert plog.ongoing_transactions() == {}
    result = plog.read(0, 1 << 20, isolation=IsolationLevel.READ_COMMITTED)
    assert [(a.producer_id, a.first_offset) for a in result.aborted_transactions or ()] == [(77, 0)]


def test_load_keeps_held_offsets_of_a_listed_transaction_after_an_epoch_bump(host: Host) -> None:
    # Producer "tx" committed an earlier transaction's offsets in __consumer_offsets-p
    # (its COMMIT marker leaves a producer entry at epoch 0 there), then a new instance
    # re-initialized (epoch 1) and began a transaction with offsets: AddOffsetsToTxn is
    # durable and lists the partition, the TxnOffsetCommit is held.  After a restart the
    # held offsets belong to that listed transaction; the start-up rule must not read
    # the partition's stale producer entry (epoch 0) and abort them behind its back: the
    # producer's commit would then apply no offset.
    group = "g"
    p = partition_for(group, 3)
    offsets_tp = TopicPartition(OFFSETS_TOPIC_NAME, p)
    offsets_log = host.topics.partition_log(OFFSETS_TOPIC_NAME, p)

    async def first_life() -> tuple[int, int]:
        ids = itertools.count(1000)
        service = TransactionService(host, lambda: next(ids), TXN_CONFIG)
        service.load()
        await service.ensure_topic()

        async def run(handler: Callable[[int], Any]) -> Any:
            executed = service.execute(handler)
            for fut in executed.flushes:
                await asyncio.wrap_future(fut)
            return executed.response

        init = InitProducerIdRequest("tx", 60_000)
        first = await run(lambda now: service.coordinator.init_producer_id(init, now))
        pid = first.producer_id
        offsets_log.append_control_marker(pid, 0, True, 0)  # an earlier commit's marker
        again = await run(lambda now: service.coordinator.init_producer_id(init, now))
        assert (again.producer_id, again.producer_epoch) == (pid, 1)
        add = AddOffsetsToTxnRequest("tx", pid, 1, group)
        added = await run(lambda now: service.coordinator.add_offsets_to_txn(add, now))
        assert added.error_code == ErrorCode.NONE
        for fut in service.add_pending_offsets(
            pid, 1, group, [PendingOffset(group, "t", 0, 42, -1, "")]
        ):
            await asyncio.wrap_future(fut)
        state = host.topics.partition_log("__transaction_state", 0)
        await asyncio.wrap_future(state.flush_future(state.log_end_offset - 1))  # durable
        service.close()
        return pid, 1

    pid, epoch = asyncio.run(first_life())

    async def second_life() -> None:
        host.groups.load()  # the restart: the TxnOffsetCommit batch has no marker: held
        assert (pid, p) in host.groups.replayed_txn_offsets
        ids = itertools.count(2000)
        service = TransactionService(host, lambda: next(ids), TXN_CONFIG)
        service.load()
        meta = service.coordinator.transaction("tx")
        assert meta is not None and offsets_tp in meta.partitions
        end = service.execute(
            lambda now: service.coordinator.end_txn(EndTxnRequest("tx", pid, epoch, True), now)
        )
        assert end.response.error_code == ErrorCode.NONE
        for fut in end.flushes:
            await asyncio.wrap_future(fut)

        def complete() -> bool:
            m = service.coordinator.transaction("tx")
            return m is not None and m.state.is_complete_or_empty

        await until(complete, "the commit never completed")
        service.close()

    asyncio.run(second_life())
    result = offsets_log.read(0, 1 << 20, isolation=IsolationLevel.READ_COMMITTED)
    assert list(result.aborted_transactions or ()) == []  # no ABORT marker was written


def test_a_reload_after_a_failed_append_aborts_nothing_and_keeps_held_offsets(
    host: Host,
) -> None:
    # An append to __transaction_state that fails at runtime (disk full, EIO) reloads the
    # coordinator from its log.  That reload is no start-up: the held TxnOffsetCommit
    # offsets are the service's own (not the start-up replay's, some settled since), and
    # no transaction lost its Ongoing record, so nothing may be aborted or fenced.
    group = "g"
    p = partition_for(group, 3)
    offsets_log = host.topics.partition_log(OFFSETS_TOPIC_NAME, p)

    async def run(service: TransactionService, handler: Callable[[int], Any]) -> Any:
        executed = service.execute(handler)
        for fut in executed.flushes:
            await asyncio.wrap_future(fut)
        return executed.response

    async def first_life() -> int:
        ids = itertools.count(1000)
        service = TransactionService(host, lambda: next(ids), TXN_CONFIG)
        service.load()
        await service.ensure_topic()
        init = InitProducerIdRequest("tx", 60_000)
        pid = int(
            (
                await run(service, lambda n: service.coordinator.init_producer_id(init, n))
            ).producer_id
        )
        add = AddOffsetsToTxnRequest("tx", pid, 0, group)
        await run(service, lambda n: service.coordinator.add_offsets_to_txn(add, n))
        for fut in service.add_pending_offsets(
            pid, 0, group, [PendingOffset(group, "t", 0, 42, -1, "")]
        ):
            await asyncio.wrap_future(fut)
        state = host.topics.partition_log("__transaction_state", 0)
        await asyncio.wrap_future(state.flush_future(state.log_end_offset - 1))
        service.close()
        return pid

    pid = asyncio.run(first_life())

    async def second_life() -> None:
        host.groups.load()
        assert (pid, p) in host.groups.replayed_txn_offsets  # held at the start
        ids = itertools.count(2000)
        service = TransactionService(host, lambda: next(ids), TXN_CONFIG)
        service.load()
        end = EndTxnRequest("tx", pid, 0, True)
        await run(service, lambda n: service.coordinator.end_txn(end, n))

        def committed() -> bool:
            meta = service.coordinator.transaction("tx")
            return meta is not None and meta.state.is_complete_or_empty

        await until(committed, "the commit never completed")  # the held offsets settled
        assert service.unstable_offsets(group) == set()
        # the next transaction of "tx" writes to t-0 only
        add = AddPartitionsToTxnRequest("tx", pid, 0, frozenset({T0}))
        await run(service, lambda n: service.coordinator.add_partitions_to_txn(add, n))
        before = offsets_log.log_end_offset
        init = InitProducerIdRequest("other", 60_000)
        with (
            faults.inject("segment.write", error=28, match="__transaction_state", times=1),
            pytest.raises(Exception),  # noqa: B017 -- whatever the append raised
        ):
            service.execute(lambda n: service.coordinator.init_producer_id(init, n))
        meta = service.coordinator.transaction("tx")
        assert meta is not None  # reloaded from the log: Ongoing at epoch 0, untouched
        assert (meta.producer_epoch, meta.state.name, meta.partitions) == (0, "ONGOING", {T0})
        assert service.unstable_offsets(group) == set()  # the settled offsets stay settled
        end = EndTxnRequest("tx", pid, 0, True)
        await run(service, lambda n: service.coordinator.end_txn(end, n))
        await until(committed, "the second commit never completed")
        service.close()
        assert offsets_log.log_end_offset == before  # no marker there: no ABORT

    asyncio.run(second_life())
    result = offsets_log.read(0, 1 << 20, isolation=IsolationLevel.READ_COMMITTED)
    assert list(result.aborted_transactions or ()) == []
