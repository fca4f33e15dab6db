"""The other group adapters against a fake group service: version shapes, topic id
mapping, per-group and per-member errors."""

from __future__ import annotations

import uuid

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.handlers import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    leave_group,
    list_groups,
    offset_delete,
    offset_fetch,
    sync_group,
)
from riverbed.coordinator import (
    ConsumerGroupDescription,
    ConsumerGroupMemberDescription,
    DeletedGroup,
    DescribedGroup,
    LeaveGroupMemberResponse,
    ListedGroup,
    OffsetFetchPartition,
    PartitionResult,
    Pending,
    Reply,
)
from riverbed.coordinator import ConsumerGroupHeartbeatResponse as Beaten
from riverbed.coordinator import LeaveGroupResponse as Left
from riverbed.coordinator import OffsetDeleteResponse as Deleted
from riverbed.coordinator import OffsetFetchResponse as Fetched
from riverbed.coordinator import SyncGroupResponse as Synced
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)


def _left(*members: tuple[str, ErrorCode]) -> Reply[Left]:
    return Reply(
        Left(ErrorCode.NONE, tuple(LeaveGroupMemberResponse(m, None, c) for m, c in members))
    )


def test_leave_group_v0_to_2_reports_the_members_error_at_the_top() -> None:
    broker = FakeBroker()
    broker.groups.coordinator.replies["leave_group"] = _left(("m", ErrorCode.UNKNOWN_MEMBER_ID))
    request = LeaveGroupRequest(group_id="g", member_id="m")
    response = answer(leave_group.handle, broker, ctx(leave_group.API_KEY, 2), request)
    assert response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    [(_, sent)] = broker.groups.coordinator.calls
    assert [m.member_id for m in sent.members] == ["m"]


def test_leave_group_v3_answers_each_member() -> None:
    broker = FakeBroker()
    broker.groups.coordinator.replies["leave_group"] = _left(
        ("a", ErrorCode.NONE), ("b", ErrorCode.UNKNOWN_MEMBER_ID)
    )
    request = LeaveGroupRequest(
        group_id="g",
        members=[
            LeaveGroupRequest.MemberIdentity(member_id="a"),
            LeaveGroupRequest.MemberIdentity(member_id="b"),
        ],
    )
    response = answer(leave_group.handle, broker, ctx(leave_group.API_KEY, 3), request)
    assert response.error_code == ErrorCode.NONE
    assert [(m.member_id, m.error_code) for m in response.members] == [
        ("a", ErrorCode.NONE),
        ("b", ErrorCode.UNKNOWN_MEMBER_ID),
    ]


def _fetched() -> Fetched:
    return Fetched(
        ErrorCode.NONE,
        (OffsetFetchPartition("t", 0, 42, -1, "meta"), OffsetFetchPartition("gone", 0, 1, -1, "")),
    )


def test_offset_fetch_single_group_versions() -> None:
    broker = FakeBroker()
    broker.groups.coordinator.replies["offset_fetch"] = _fetched()
    request = OffsetFetchRequest(
        group_id="g",
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])],
    )
    response = answer(offset_fetch.handle, broker, ctx(offset_fetch.API_KEY, 7), request)
    rows = [
        (t.name, p.partition_index, p.committed_offset, p.metadata)
        for t in response.topics
        for p in t.partitions
    ]
    assert rows == [("t", 0, 42, "meta"), ("gone", 0, 1, "")]
    [(_, sent)] = broker.groups.coordinator.calls
    assert (sent.group_id, [(p.topic, p.partition) for p in sent.partitions]) == ("g", [("t", 0)])


def test_offset_fetch_by_topic_id_drops_deleted_topics_and_flags_unknown_ids() -> None:
    broker = FakeBroker()
    topic = broker.topics.add("t")
    broker.groups.coordinator.replies["offset_fetch"] = _fetched()
    stranger = uuid.uuid4()
    Topics = OffsetFetchRequest.OffsetFetchRequestTopics
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id="g",
                topics=[
                    Topics(topic_id=topic.topic_id, partition_indexes=[0]),
                    Topics(topic_id=stranger, partition_indexes=[3]),
                ],
            )
        ]
    )
    response = answer(offset_fetch.handle, broker, ctx(offset_fetch.API_KEY, 10), request)
    [group] = response.groups
    rows = [
        (t.name, t.topic_id, p.partition_index, p.committed_offset, p.error_code)
        for t in group.topics
        for p in t.partitions
    ]
    assert rows == [
        ("t", topic.topic_id, 0, 42, ErrorCode.NONE),  # "gone" has no id any more: left out
        ("", stranger, 3, -1, ErrorCode.UNKNOWN_TOPIC_ID),
    ]


def test_offset_fetch_with_a_closing_coordinator() -> None:
    broker = FakeBroker()
    broker.groups.closed = True
    request = OffsetFetchRequest(group_id="g", topics=None)
    response = answer(offset_fetch.handle, broker, ctx(offset_fetch.API_KEY, 7), request)
    assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_list_and_delete_groups() -> None:
    broker = FakeBroker()
    coordinator = broker.groups.coordinator
    coordinator.replies["list_groups"] = [ListedGroup("g", "consumer", "Empty", "classic")]
    listed = answer(
        list_groups.handle,
        broker,
        ctx(list_groups.API_KEY, 5),
        ListGroupsRequest(states_filter=["Empty"], types_filter=[]),
    )
    assert [(g.group_id, g.group_state, g.group_type) for g in listed.groups] == [
        ("g", "Empty", "classic")
    ]
    coordinator.replies["delete_groups"] = Reply(
        [DeletedGroup("g", ErrorCode.NONE), DeletedGroup("h", ErrorCode.NON_EMPTY_GROUP)]
    )
    deleted = answer(
        delete_groups.handle,
        broker,
        ctx(delete_groups.API_KEY, 2),
        DeleteGroupsRequest(groups_names=["g", "h"]),
    )
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("g", ErrorCode.NONE),
        ("h", ErrorCode.NON_EMPTY_GROUP),
    ]
    broker.groups.closed = True
    refused = answer(
        delete_groups.handle,
        broker,
        ctx(delete_groups.API_KEY, 2),
        DeleteGroupsRequest(groups_names=["x"]),
    )
    assert [(r.group_id, r.error_code) for r in refused.results] == [
        ("x", ErrorCode.COORDINATOR_NOT_AVAILABLE)
    ]


def test_consumer_group_heartbeat_maps_topic_ids_both_ways() -> None:
    broker = FakeBroker()
    t = broker.topics.add("t", 4)
    broker.groups.coordinator.replies["consumer_group_heartbeat"] = Reply(
        Beaten(
            ErrorCode.NONE,
            member_id="m",
            member_epoch=2,
            heartbeat_interval_ms=5000,
            assignment={"t": frozenset({3, 1}), "deleted": frozenset({0})},
        )
    )
    TP = ConsumerGroupHeartbeatRequest.TopicPartitions
    request = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=1,
        subscribed_topic_names=["t"],
        topic_partitions=[
            TP(topic_id=t.topic_id, partitions=[1]),
            TP(topic_id=uuid.uuid4(), partitions=[0]),
        ],
    )
    response = answer(
        consumer_group_heartbeat.handle,
        broker,
        ctx(consumer_group_heartbeat.API_KEY, 0, "192.0.2.9"),
        request,
    )
    assert (response.error_code, response.member_epoch) == (ErrorCode.NONE, 2)
    assert [(a.topic_id, a.partitions) for a in response.assignment.topic_partitions] == [
        (t.topic_id, [1, 3])
    ]
    [(_, sent)] = broker.groups.coordinator.calls
    assert sent.owned_partitions == {"t": frozenset({1})}  # an unknown id is dropped
    assert (sent.client_host, sent.subscribed_topic_names) == ("/192.0.2.9", ("t",))


def test_sync_group_follower_waits_for_the_leaders_assignment() -> None:
    broker = FakeBroker()
    broker.groups.coordinator.replies["sync_group"] = Reply(Pending(5))
    broker.groups.deferred[5] = Synced(ErrorCode.NONE, "consumer", "range", b"mine")
    request = SyncGroupRequest(group_id="g", generation_id=1, member_id="f")
    response = answer(sync_group.handle, broker, ctx(sync_group.API_KEY, 5), request)
    assert (response.error_code, response.assignment, response.protocol_name) == (
        ErrorCode.NONE,
        b"mine",
        "range",
    )


def test_a_waiting_sync_is_answered_when_the_coordinator_closes() -> None:
    broker = FakeBroker()
    broker.groups.coordinator.replies["sync_group"] = Reply(Pending(5))
    broker.groups.closed_on_wait = True
    request = SyncGroupRequest(group_id="g", generation_id=1, member_id="f")
    response = answer(sync_group.handle, broker, ctx(sync_group.API_KEY, 5), request)
    assert response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_offset_delete_and_describe_groups() -> None:
    broker = FakeBroker()
    coordinator = broker.groups.coordinator
    coordinator.replies["offset_delete"] = Reply(
        Deleted(ErrorCode.NONE, (PartitionResult("t", 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),))
    )
    Topic = OffsetDeleteRequest.OffsetDeleteRequestTopic
    Partition = OffsetDeleteRequest.OffsetDeleteRequestPartition
    request = OffsetDeleteRequest(
        group_id="g", topics=[Topic(name="t", partitions=[Partition(partition_index=0)])]
    )
    response = answer(offset_delete.handle, broker, ctx(offset_delete.API_KEY, 0), request)
    assert [
        (t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions
    ] == [("t", 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)]
    coordinator.replies["describe_groups"] = [DescribedGroup("g", ErrorCode.NONE)]
    described = answer(
        describe_groups.handle,
        broker,
        ctx(describe_groups.API_KEY, 5),
        DescribeGroupsRequest(groups=["g"]),
    )
    assert [(g.group_id, g.group_state, g.authorized_operations) for g in described.groups] == [
        ("g", "Dead", describe_groups.AUTHORIZED_OPERATIONS_OMITTED)
    ]


def test_consumer_group_describe_names_topics_by_id_and_name() -> None:
    broker = FakeBroker()
    t = broker.topics.add("t", 2)
    member = ConsumerGroupMemberDescription(
        "m",
        None,
        None,
        3,
        "client",
        "/10.0.0.1",
        ("t",),
        None,
        assignment={"t": frozenset({1, 0})},
        target_assignment={"gone": frozenset({0})},
    )
    broker.groups.coordinator.replies["consumer_group_describe"] = [
        ConsumerGroupDescription("g", ErrorCode.NONE, "Stable", 3, 3, "uniform", (member,)),
        ConsumerGroupDescription("classic", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    response = answer(
        consumer_group_describe.handle,
        broker,
        ctx(consumer_group_describe.API_KEY, 0),
        ConsumerGroupDescribeRequest(group_ids=["g", "classic"]),
    )
    assert [(g.group_id, g.error_code) for g in response.groups] == [
        ("g", ErrorCode.NONE),
        ("classic", ErrorCode.GROUP_ID_NOT_FOUND),
    ]
    [described] = response.groups[0].members
    assert [
        (a.topic_id, a.topic_name, a.partitions) for a in described.assignment.topic_partitions
    ] == [(t.topic_id, "t", [0, 1])]
    assert [(a.topic_id, a.topic_name) for a in described.target_assignment.topic_partitions] == [
        (uuid.UUID(int=0), "gone")
    ]
