"""Group API adapters against a fake group service: mapping, flush waits, shutdown."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.handlers import consumer_group_heartbeat as cgh
from riverbed.broker.handlers import heartbeat, join_group, offset_commit
from riverbed.coordinator import HeartbeatResponse as Beat
from riverbed.coordinator import JoinGroupResponse as Joined
from riverbed.coordinator import OffsetCommitResponse as Committed
from riverbed.coordinator import PartitionResult, Pending, Reply
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ConsumerGroupHeartbeatRequest as Req
from riverbed.protocol.messages import HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest

CommitTopic = OffsetCommitRequest.OffsetCommitRequestTopic
CommitPartition = OffsetCommitRequest.OffsetCommitRequestPartition


def test_heartbeat_maps_the_request_and_the_coordinators_code() -> None:
    broker = FakeBroker()
    broker.groups.coordinator.replies["heartbeat"] = Reply(Beat(ErrorCode.REBALANCE_IN_PROGRESS))
    request = HeartbeatRequest(group_id="g", generation_id=3, member_id="m")
    response = answer(heartbeat.handle, broker, ctx(heartbeat.API_KEY, 4), request)
    assert response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    [(method, sent)] = broker.groups.coordinator.calls
    assert (method, sent.group_id, sent.generation_id, sent.member_id) == ("heartbeat", "g", 3, "m")


def test_a_closing_coordinator_answers_coordinator_not_available() -> None:
    broker = FakeBroker()
    broker.groups.closed = True
    response = answer(heartbeat.handle, broker, ctx(heartbeat.API_KEY, 4), HeartbeatRequest())
    assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def _commit_request() -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id="g",
        generation_id_or_member_epoch=1,
        member_id="m",
        topics=[
            CommitTopic(
                name="t",
                partitions=[
                    CommitPartition(partition_index=0, committed_offset=5),
                    CommitPartition(partition_index=9, committed_offset=1),
                ],
            ),
            CommitTopic(name="gone", partitions=[CommitPartition(partition_index=0)]),
        ],
    )


def _rows(response: Any) -> list[tuple[str, int, int]]:
    return [
        (t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions
    ]


def test_offset_commit_rejects_unknown_partitions_before_the_coordinator() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    broker.groups.coordinator.replies["offset_commit"] = Reply(
        Committed((PartitionResult("t", 0, ErrorCode.NONE),))
    )
    response = answer(
        offset_commit.handle, broker, ctx(offset_commit.API_KEY, 8), _commit_request()
    )
    assert sorted(_rows(response)) == [
        ("gone", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", 0, ErrorCode.NONE),
        ("t", 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    [(_, sent)] = broker.groups.coordinator.calls
    assert [(p.topic, p.partition, p.committed_offset) for p in sent.partitions] == [("t", 0, 5)]


def test_offset_commit_answers_only_after_its_records_are_durable() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    broker.groups.coordinator.replies["offset_commit"] = Reply(
        Committed((PartitionResult("t", 0, ErrorCode.NONE),))
    )
    flush: concurrent.futures.Future[None] = concurrent.futures.Future()
    broker.groups.flushes = (flush,)

    async def scenario() -> None:
        pending = offset_commit.handle(broker, ctx(offset_commit.API_KEY, 8), _commit_request())
        assert asyncio.iscoroutine(pending)
        task = asyncio.ensure_future(pending)
        await asyncio.sleep(0.01)
        assert not task.done()
        flush.set_result(None)
        assert ("t", 0, ErrorCode.NONE) in _rows(await asyncio.wait_for(task, 5))

    asyncio.run(scenario())


def test_offset_commit_with_a_closing_coordinator_fails_every_partition() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    broker.groups.closed = True
    response = answer(
        offset_commit.handle, broker, ctx(offset_commit.API_KEY, 8), _commit_request()
    )
    assert sorted(_rows(response)) == [
        ("gone", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", 0, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        ("t", 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]


def test_join_group_reports_the_client_from_the_request_context_and_waits() -> None:
    broker = FakeBroker()
    broker.groups.coordinator.replies["join_group"] = Reply(Pending(42))
    broker.groups.deferred[42] = Joined(
        ErrorCode.NONE,
        member_id="m-1",
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        leader="m-1",
    )
    request = JoinGroupRequest(
        group_id="g",
        session_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"x")],
    )
    response = answer(join_group.handle, broker, ctx(join_group.API_KEY, 7, "10.1.2.3"), request)
    assert (response.error_code, response.member_id, response.generation_id) == (
        ErrorCode.NONE,
        "m-1",
        1,
    )
    [(_, sent)] = broker.groups.coordinator.calls
    assert (sent.client_host, sent.client_id, sent.protocols) == (
        "/10.1.2.3",
        "unit",
        (("range", b"x"),),
    )


def test_consumer_group_heartbeats_kafka_refuses_before_its_coordinator() -> None:
    """INVALID_REQUEST with Kafka 4.4's words (GroupCoordinatorService); the coordinator is
    not asked (tests/compat/test_consumer_group_commit_epochs.py compares three of these
    with Kafka 4.4 on the wire)."""

    def join(**fields: object) -> Req:
        request = Req(
            group_id="g",
            member_id="m",
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
        for name, value in fields.items():
            setattr(request, name, value)
        return request

    def invalid(version: int = 1, **fields: object) -> str | None:
        return cgh.invalid(join(**fields), version)

    assert invalid() is None
    assert invalid(member_epoch=5, topic_partitions=None) is None
    assert invalid(0, member_id="") is None  # a v0 join: the coordinator names it
    assert invalid(1, member_id=" ") == "MemberId can't be empty."  # trimmed, as Java's
    assert invalid(0, member_id="", member_epoch=3) == "MemberId can't be empty."
    assert invalid(group_id="") == "GroupId can't be empty."
    assert invalid(member_epoch=-3) == "MemberEpoch is invalid."
    assert invalid(member_epoch=-2) == "InstanceId can't be null."
    assert invalid(member_epoch=-2, instance_id="i") is None
    assert invalid(instance_id="") == "InstanceId can't be empty."
    assert invalid(rack_id="") == "RackId can't be empty."
    assert invalid(topic_partitions=None) == "TopicPartitions must be empty when (re-)joining."
    assert invalid(rebalance_timeout_ms=-1) == (
        "RebalanceTimeoutMs must be provided in first request."
    )
