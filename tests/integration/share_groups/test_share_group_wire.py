"""Share group APIs over the raw wire: ShareGroupHeartbeat, ShareGroupDescribe, ListGroups
with the type filter, DeleteGroups, group type conflicts, share session epochs."""

from __future__ import annotations

import time
import uuid

from share_helpers import Wire, close_all, create_topic, poll, produce, share_consumer

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from riverbed.testing.broker_process import BrokerProcess

E = ErrorCode
LIST_GROUPS, DELETE_GROUPS, CONSUMER_HEARTBEAT = 16, 42, 68
SHARE_HEARTBEAT, SHARE_DESCRIBE, SHARE_FETCH, SHARE_ACK = 76, 77, 78, 79
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, GROUP_RESOURCE = 32, 44, 32


def heartbeat(wire: Wire, group: str, member: str, epoch: int, topics: list[str] | None) -> object:
    req = ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
    )
    return wire.call(SHARE_HEARTBEAT, 1, req)


def listed(wire: Wire, types: list[str]) -> dict[str, tuple[str, str]]:
    resp = wire.call(LIST_GROUPS, 5, ListGroupsRequest(states_filter=[], types_filter=types))
    return {g.group_id: (g.group_type, g.group_state) for g in resp.groups}


def test_membership_describe_list_delete_and_conflicts(share_broker: BrokerProcess) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "q", 2)
    wire = Wire(bs)
    try:
        members = [uuid.uuid4().hex for _ in range(3)]
        answers = [heartbeat(wire, "sg", m, 0, ["q"]) for m in members]
        assert all(a.error_code == E.NONE for a in answers), answers
        # three members, two partitions: every member has work, partitions are shared
        epoch = answers[-1].member_epoch
        final = [
            heartbeat(wire, "sg", m, a.member_epoch, None)
            for m, a in zip(members, answers, strict=True)
        ]
        owned = [
            sorted(p for t in (f.assignment or a.assignment).topic_partitions for p in t.partitions)
            for f, a in zip(final, answers, strict=True)
        ]
        assert all(owned) and {p for ps in owned for p in ps} == {0, 1}, owned
        assert heartbeat(wire, "sg", members[0], epoch + 5, None).error_code == (
            E.FENCED_MEMBER_EPOCH
        )
        described = wire.call(
            SHARE_DESCRIBE, 1, ShareGroupDescribeRequest(group_ids=["sg", "nope"])
        ).groups
        assert described[0].error_code == E.NONE and len(described[0].members) == 3
        assert described[0].group_state == "Stable" and described[0].assignor_name == "simple"
        assert described[1].error_code == E.GROUP_ID_NOT_FOUND
        # a consumer group and a share group cannot share an id
        cg = wire.call(
            CONSUMER_HEARTBEAT,
            0,
            ConsumerGroupHeartbeatRequest(
                group_id="sg", member_id="", member_epoch=0, rebalance_timeout_ms=5000,
                subscribed_topic_names=["q"], server_assignor=None, topic_partitions=[],
            ),
        )  # fmt: skip
        assert cg.error_code == E.GROUP_ID_NOT_FOUND
        assert listed(wire, ["share"]) == {"sg": ("share", "Stable")}
        assert "sg" not in listed(wire, ["consumer"])
        delete = DeleteGroupsRequest(groups_names=["sg"])
        result = wire.call(DELETE_GROUPS, 2, delete).results[0]
        assert result.error_code == E.NON_EMPTY_GROUP
        for m, f in zip(members, final, strict=True):
            assert heartbeat(wire, "sg", m, -1, None).error_code == E.NONE, f
        assert listed(wire, ["share"]) == {"sg": ("share", "Empty")}
        assert wire.call(DELETE_GROUPS, 2, delete).results[0].error_code == E.NONE
        assert listed(wire, []).get("sg") is None
    finally:
        wire.close()


def test_share_session_epochs(share_broker: BrokerProcess) -> None:
    bs = share_broker.bootstrap_servers
    wire = Wire(bs)
    try:

        def fetch(epoch: int) -> int:
            req = ShareFetchRequest(
                group_id="sess", member_id="m1", share_session_epoch=epoch, max_wait_ms=0,
                min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10, topics=[],
                forgotten_topics_data=[],
            )  # fmt: skip
            return int(wire.call(SHARE_FETCH, 1, req).error_code)

        def ack(epoch: int) -> int:
            req = ShareAcknowledgeRequest(
                group_id="sess", member_id="m1", share_session_epoch=epoch, topics=[]
            )
            return int(wire.call(SHARE_ACK, 1, req).error_code)

        assert fetch(1) == E.SHARE_SESSION_NOT_FOUND
        assert ack(0) == E.INVALID_SHARE_SESSION_EPOCH
        assert fetch(0) == E.NONE  # opens; next epoch 1
        assert fetch(2) == E.INVALID_SHARE_SESSION_EPOCH
        assert fetch(1) == E.NONE
        assert ack(2) == E.NONE
        assert ack(-1) == E.NONE  # closes
        assert fetch(3) == E.SHARE_SESSION_NOT_FOUND
    finally:
        wire.close()


def test_group_configs_survive_a_kill_9_and_earliest_delivers_older_records(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "old", 1)
    produce(bs, "old", [b"before-1", b"before-2"], 1)
    wire = Wire(bs)
    op = IncrementalAlterConfigsRequest.AlterableConfig
    alter = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=GROUP_RESOURCE,
                resource_name="early",
                configs=[op(name="share.auto.offset.reset", config_operation=0, value="earliest")],
            )
        ],
        validate_only=False,
    )
    bad = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=GROUP_RESOURCE,
                resource_name="early",
                configs=[op(name="share.no.such.thing", config_operation=0, value="1")],
            )
        ],
        validate_only=False,
    )
    try:
        assert wire.call(INCREMENTAL_ALTER_CONFIGS, 1, alter).responses[0].error_code == E.NONE
        assert wire.call(INCREMENTAL_ALTER_CONFIGS, 1, bad).responses[0].error_code == (
            E.INVALID_CONFIG
        )
    finally:
        wire.close()
    share_broker.kill()
    share_broker.start(timeout_s=120)
    wire = Wire(bs)
    try:
        describe = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=GROUP_RESOURCE,
                    resource_name="early",
                    configuration_keys=["share.auto.offset.reset"],
                )
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        [config] = wire.call(DESCRIBE_CONFIGS, 4, describe).results[0].configs
        assert (config.name, config.value) == ("share.auto.offset.reset", "earliest")
    finally:
        wire.close()
    consumer = share_consumer(bs, "early", "old")
    try:
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 2:
            assert time.monotonic() < deadline, got
            msgs = poll(consumer, 0.2)
            got += [m.value() or b"" for m in msgs]
            for m in msgs:
                consumer.acknowledge(m)
            if msgs:
                consumer.commit_sync(30)
        assert got == [b"before-1", b"before-2"]
    finally:
        close_all([consumer])
