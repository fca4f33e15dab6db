"""What a TransactionService answer waits for (a real group-commit flusher; the fsyncs of
``__transaction_state`` blocked with the ``segment.fsync`` failure point):

* an Ongoing record (AddPartitionsToTxn) is answered once appended: no fsync of its own;
* but not before its id's earlier decision is durable: an Ongoing record appended while
  the id's Empty record (InitProducerId) is still unsynced waits for that fsync;
* decisions (Empty, PrepareCommit) wait for their own fsync, as before;
* and at load, a transaction open in a data partition that no coordinator transaction
  lists is aborted (a direct ABORT marker).

On the code before the change the first check fails (the answer waited for the Ongoing
record's fsync)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from riverbed.broker.config import BrokerConfig
from riverbed.broker.groups import OFFSETS_TOPIC_CONFIGS, GroupService
from riverbed.broker.purgatory import FetchPurgatory
from riverbed.broker.topics import TopicManager
from riverbed.broker.transactions import TransactionService
from riverbed.clock import ManualClock
from riverbed.coordinator import OFFSETS_TOPIC_NAME
from riverbed.coordinator.transactions import (
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

PROPS = {"offsets.topic.num.partitions": "3"}
TXN_CONFIG = TransactionCoordinatorConfig(
    transaction_state_log_num_partitions=1, offsets_topic_num_partitions=3
)
T0 = TopicPartition("t", 0)


@dataclass
class Host:
    topics: TopicManager
    groups: GroupService
    config: BrokerConfig = field(default_factory=lambda: BrokerConfig.from_props(PROPS))
    clock: ManualClock = field(default_factory=ManualClock)
    purgatory: FetchPurgatory = field(default_factory=FetchPurgatory)


@dataclass
class GroupsHost:
    topics: TopicManager
    config: BrokerConfig
    clock: ManualClock = field(default_factory=ManualClock)
    purgatory: FetchPurgatory = field(default_factory=FetchPurgatory)


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
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while plog.last_stable_offset != plog.high_watermark:
            assert loop.time() < deadline, "the orphan was never aborted"
            await asyncio.sleep(0.01)
        service.close()

    asyncio.run(scenario())
    assert plog.ongoing_transactions() == {}
    result = plog.read(0, 1 << 20, isolation=IsolationLevel.READ_COMMITTED)
    assert [(a.producer_id, a.first_offset) for a in result.aborted_transactions or ()] == [(77, 0)]
