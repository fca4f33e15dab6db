"""GroupService on a real topic table: what a call wrote and the fsyncs covering it come
back together (:class:`Executed`), records reach ``__consumer_offsets`` and replay."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from riverbed.broker.config import BrokerConfig
from riverbed.broker.groups import OFFSETS_TOPIC_CONFIGS, CoordinatorClosedError, GroupService
from riverbed.broker.purgatory import FetchPurgatory
from riverbed.broker.topics import TopicManager
from riverbed.clock import ManualClock
from riverbed.coordinator import (
    OFFSETS_TOPIC_NAME,
    HeartbeatRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TopicPartition,
    partition_for,
)
from riverbed.coordinator.config import coordinator_config_from_props
from riverbed.protocol.error_codes import ErrorCode
from riverbed.storage.manager import LogManager

PROPS = {"offsets.topic.num.partitions": "3"}


@dataclass
class Host:
    """The parts of a broker GroupService uses (:class:`GroupHost`)."""

    topics: TopicManager
    config: BrokerConfig = field(default_factory=lambda: BrokerConfig.from_props(PROPS))
    clock: ManualClock = field(default_factory=ManualClock)
    purgatory: FetchPurgatory = field(default_factory=FetchPurgatory)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    logs = LogManager(tmp_path, start_background=False)
    config = BrokerConfig.from_props(PROPS)
    topics = TopicManager(tmp_path, logs, config)
    # created before the loop runs, as Broker.start does (off the loop)
    topics.create_topic(OFFSETS_TOPIC_NAME, 3, configs=dict(OFFSETS_TOPIC_CONFIGS))
    yield Host(topics, config)
    topics.close()
    logs.close()


def _service(host: Host) -> GroupService:
    service = GroupService(host, coordinator_config_from_props(PROPS))
    service.load()
    return service


def _commit(offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest("g", (OffsetCommitPartition("t", 0, offset),))


def test_a_call_that_writes_returns_its_flushes_with_its_answer(host: Host) -> None:
    async def scenario() -> None:
        service = _service(host)
        coordinator = service.coordinator
        partition = partition_for("g", service.num_partitions)
        wake = host.purgatory.watch([TopicPartition(OFFSETS_TOPIC_NAME, partition)])
        executed = service.execute(lambda now: coordinator.offset_commit(_commit(5), now))
        assert [p.error_code for p in executed.response.partitions] == [ErrorCode.NONE]
        assert len(executed.flushes) == 1  # flush.messages=1: durable before answering
        await asyncio.wait_for(asyncio.wrap_future(executed.flushes[0]), 5)
        assert wake.done()  # a consumer of __consumer_offsets is woken
        plog = host.topics.partition_log(OFFSETS_TOPIC_NAME, partition)
        assert plog.log_end_offset == 1

        nothing = service.execute(
            lambda now: coordinator.heartbeat(HeartbeatRequest("nobody", 1, "m"), now)
        )
        assert nothing.flushes == ()  # wrote no records: nothing to wait for
        service.close()

    asyncio.run(scenario())


def test_a_restarted_service_replays_the_commits(host: Host) -> None:
    async def scenario() -> None:
        first = _service(host)
        executed = first.execute(lambda now: first.coordinator.offset_commit(_commit(7), now))
        await asyncio.wait_for(asyncio.gather(*map(asyncio.wrap_future, executed.flushes)), 5)
        first.close()
        second = _service(host)
        fetched = second.query(lambda: second.coordinator.offset_fetch(OffsetFetchRequest("g")))
        assert [(p.topic, p.partition, p.committed_offset) for p in fetched.partitions] == [
            ("t", 0, 7)
        ]
        second.close()

    asyncio.run(scenario())


def test_a_closed_service_refuses_calls(host: Host) -> None:
    async def scenario() -> None:
        service = _service(host)
        service.close()
        with pytest.raises(CoordinatorClosedError):
            service.execute(lambda now: service.coordinator.offset_commit(_commit(1), now))
        with pytest.raises(CoordinatorClosedError):
            service.query(lambda: None)

    asyncio.run(scenario())
