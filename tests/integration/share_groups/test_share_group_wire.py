"""Share group APIs over the raw wire: ShareGroupHeartbeat, ShareGroupDescribe, ListGroups
with the type filter, DeleteGroups, group type conflicts, share session epochs."""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from share_helpers import (
    BROKER_CONFIG,
    Wire,
    alter_offsets_request,
    close_all,
    create_topic,
    describe_offsets_request,
    poll,
    produce,
    set_group_configs,
    share_consumer,
)

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from riverbed.protocol.primitives import ZERO_UUID
from riverbed.testing.broker_process import BrokerProcess, free_port
from riverbed.testing.kafka_share_reference import share_kafka

E = ErrorCode
LIST_GROUPS, DELETE_GROUPS, CONSUMER_HEARTBEAT, FIND_COORDINATOR = 16, 42, 68, 10
JOIN_GROUP, METADATA, DESCRIBE_GROUPS = 11, 3, 15
SHARE_HEARTBEAT, SHARE_DESCRIBE, SHARE_FETCH, SHARE_ACK = 76, 77, 78, 79
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, GROUP_RESOURCE = 32, 44, 32
FENCE_TIMINGS = {"riverbed": (3_000, 10_000), "kafka": (None, 20_000)}
"""The fenced-member test's group ``share.session.timeout.ms`` (None: the broker's, 10 s on
the Kafka reference) and ``share.record.lock.duration.ms``, per broker: in both, the member
is fenced well before its lock expires."""
WIRE_CONFIG = {
    **BROKER_CONFIG,
    "group.share.min.session.timeout.ms": "1000",
    "group.share.min.record.lock.duration.ms": "1000",
}


@pytest.fixture(scope="module")
def kafka_bootstrap() -> Iterator[str]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    with share_kafka() as broker:
        yield broker.bootstrap_servers


@pytest.fixture(scope="module")
def riverbed_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``riverbed broker`` process for the module's differential tests, as Kafka's is
    one broker for all of them (each test uses its own topic and group names); the test
    that kills its broker has its own (``share_broker``).  Its bounds of the per-group
    session timeout and lock duration are lowered (as the Kafka reference's are) for
    :data:`FENCE_TIMINGS`."""
    root = tmp_path_factory.mktemp("share-wire")
    broker = BrokerProcess(root / "data", free_port(), root / "broker.log", WIRE_CONFIG, "INFO")
    broker.start(timeout_s=120)
    try:
        yield broker.bootstrap_servers
    finally:
        broker.close()


@pytest.fixture(params=["riverbed", pytest.param("kafka", marks=pytest.mark.kafka)])
def bootstrap(request: pytest.FixtureRequest) -> str:
    """The same wire checks against Riverbed and Apache Kafka 4.4 (differential).

    By default only the membership test runs on Kafka as well; the others' Kafka runs are
    ``kafka_variant`` (skipped unless ``-m kafka``, see tests/conftest.py)."""
    name = "kafka_bootstrap" if request.param == "kafka" else "riverbed_bootstrap"
    return str(request.getfixturevalue(name))


def heartbeat(wire: Wire, group: str, member: str, epoch: int, topics: list[str] | None) -> Any:
    req = ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics
    )
    return wire.call(SHARE_HEARTBEAT, 1, req)


def find_coordinator(wire: Wire, group: str) -> None:
    """Kafka creates ``__consumer_offsets`` on the first FindCoordinator (NOT_COORDINATOR
    until then); wait until this node answers as the group's coordinator."""
    deadline = time.monotonic() + 60
    while True:
        req = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        [found] = wire.call(FIND_COORDINATOR, 4, req).coordinators
        if found.error_code == E.NONE:
            return
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def join(wire: Wire, group: str, member: str, topics: list[str]) -> Any:
    """A join (epoch 0), retried while the coordinator is still loading (Kafka)."""
    deadline = time.monotonic() + 60
    while True:
        answer = heartbeat(wire, group, member, 0, topics)
        retriable = (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR)
        if answer.error_code not in retriable or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def listed(wire: Wire, types: list[str]) -> dict[str, tuple[str, str]]:
    resp = wire.call(LIST_GROUPS, 5, ListGroupsRequest(states_filter=[], types_filter=types))
    return {g.group_id: (g.group_type, g.group_state) for g in resp.groups}


def test_membership_describe_list_delete_and_conflicts(bootstrap: str) -> None:
    bs = bootstrap
    create_topic(bs, "q", 2)
    wire = Wire(bs)
    try:
        find_coordinator(wire, "sg")
        members = [uuid.uuid4().hex for _ in range(3)]
        answers = [join(wire, "sg", m, ["q"]) for m in members]
        assert all(a.error_code == E.NONE for a in answers), answers
        # three members, two partitions: every member gets work, partitions are shared
        # (Kafka assigns once the share partitions' state is initialized: heartbeat on)
        epochs = {m: a.member_epoch for m, a in zip(members, answers, strict=True)}
        owned = {
            m: sorted(p for t in a.assignment.topic_partitions for p in t.partitions)
            if a.assignment is not None
            else []
            for m, a in zip(members, answers, strict=True)
        }
        deadline = time.monotonic() + 60
        while not all(owned.values()):
            assert time.monotonic() < deadline, owned
            for m in members:
                a = heartbeat(wire, "sg", m, epochs[m], None)
                assert a.error_code == E.NONE, a
                epochs[m] = a.member_epoch
                if a.assignment is not None:
                    owned[m] = sorted(
                        p for t in a.assignment.topic_partitions for p in t.partitions
                    )
            time.sleep(0.1)
        assert {p for ps in owned.values() for p in ps} == {0, 1}, owned
        epoch = max(epochs.values())
        assert heartbeat(wire, "sg", members[0], epoch + 5, None).error_code == (
            E.FENCED_MEMBER_EPOCH
        )
        described = wire.call(
            SHARE_DESCRIBE, 1, ShareGroupDescribeRequest(group_ids=["sg", "nope"])
        ).groups
        assert described[0].error_code == E.NONE and len(described[0].members) == 3
        assert described[0].group_state == "Stable" and described[0].assignor_name == "simple"
        assert described[1].error_code == E.GROUP_ID_NOT_FOUND
        classic_view = wire.call(
            DESCRIBE_GROUPS,
            6,
            DescribeGroupsRequest(groups=["sg"], include_authorized_operations=False),
        ).groups[0]
        assert classic_view.error_code == E.GROUP_ID_NOT_FOUND, classic_view
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
        classic = JoinGroupRequest(
            group_id="sg", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
        )  # fmt: skip
        assert wire.call(JOIN_GROUP, 9, classic).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        # and the other way round: a consumer group's id is not a share group's
        other = ConsumerGroupHeartbeatRequest(
            group_id="cg-only", member_id=uuid.uuid4().hex, member_epoch=0,
            rebalance_timeout_ms=5000, subscribed_topic_names=["q"], server_assignor=None,
            topic_partitions=[],
        )  # fmt: skip
        assert wire.call(CONSUMER_HEARTBEAT, 1, other).error_code == E.NONE
        assert join(wire, "cg-only", uuid.uuid4().hex, ["q"]).error_code == (E.GROUP_ID_NOT_FOUND)
        assert listed(wire, ["share"]) == {"sg": ("share", "Stable")}
        assert "sg" not in listed(wire, ["consumer"])
        delete = DeleteGroupsRequest(groups_names=["sg"])
        result = wire.call(DELETE_GROUPS, 2, delete).results[0]
        assert result.error_code == E.NON_EMPTY_GROUP
        for m in members:
            assert heartbeat(wire, "sg", m, -1, None).error_code == E.NONE
        assert listed(wire, ["share"]) == {"sg": ("share", "Empty")}
        assert wire.call(DELETE_GROUPS, 2, delete).results[0].error_code == E.NONE
        assert listed(wire, []).get("sg") is None
    finally:
        wire.close()


@pytest.mark.kafka_variant
def test_share_session_epochs(bootstrap: str) -> None:
    bs = bootstrap
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


@pytest.mark.kafka_variant
def test_share_fetch_and_acknowledge_over_the_wire(bootstrap: str) -> None:
    bs = bootstrap
    create_topic(bs, "wq", 1)
    set_group_configs(bs, "wg", share_auto_offset_reset="earliest")
    produce(bs, "wq", [f"w{i}".encode() for i in range(5)], 1)
    wire = Wire(bs)
    try:
        meta = wire.call(
            METADATA,
            12,
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="wq")],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
        topic_id = meta.topics[0].topic_id
        find_coordinator(wire, "wg")
        member = uuid.uuid4().hex
        answer = join(wire, "wg", member, ["wq"])
        epoch = answer.member_epoch
        deadline = time.monotonic() + 60
        while answer.assignment is None or not answer.assignment.topic_partitions:
            assert time.monotonic() < deadline, answer  # Kafka: state initialized first
            time.sleep(0.2)
            answer = heartbeat(wire, "wg", member, epoch, None)
            epoch = answer.member_epoch
        session = 0

        def fetch(topics: list[int]) -> Any:
            nonlocal session
            req = ShareFetchRequest(
                group_id="wg", member_id=member, share_session_epoch=session, max_wait_ms=5000,
                min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                topics=[
                    ShareFetchRequest.FetchTopic(
                        topic_id=topic_id,
                        partitions=[ShareFetchRequest.FetchPartition(partition_index=0)],
                    )
                ] if topics else [],
                forgotten_topics_data=[],
            )  # fmt: skip
            resp = wire.call(SHARE_FETCH, 1, req)
            assert resp.error_code == E.NONE, resp
            session += 1
            return [
                (a.first_offset, a.last_offset, a.delivery_count)
                for t in resp.responses
                for p in t.partitions
                for a in p.acquired_records
            ]

        def ack(batches: list[tuple[int, int, list[int]]], final: bool = False) -> int:
            nonlocal session
            req = ShareAcknowledgeRequest(
                group_id="wg", member_id=member, share_session_epoch=-1 if final else session,
                topics=[
                    ShareAcknowledgeRequest.AcknowledgeTopic(
                        topic_id=topic_id,
                        partitions=[
                            ShareAcknowledgeRequest.AcknowledgePartition(
                                partition_index=0,
                                acknowledgement_batches=[
                                    ShareAcknowledgeRequest.AcknowledgementBatch(
                                        first_offset=f, last_offset=last, acknowledge_types=t
                                    )
                                    for f, last, t in batches
                                ],
                            )
                        ],
                    )
                ],
            )  # fmt: skip
            resp = wire.call(SHARE_ACK, 1, req)
            assert resp.error_code == E.NONE, resp
            session += 1
            return int(resp.responses[0].partitions[0].error_code)

        acquired = fetch([0])
        while sum(last - first + 1 for first, last, _ in acquired) < 5:
            acquired += fetch([])
        assert acquired == [(0, 4, 1)], acquired
        # 0-1 ACCEPT, 2 RELEASE, 3-4 REJECT (one type per offset)
        assert ack([(0, 4, [1, 1, 2, 3, 3])]) == E.NONE
        assert ack([(0, 0, [1])]) == E.NONE  # below the start offset: done, ignored
        assert ack([(3, 3, [1])]) == E.INVALID_RECORD_STATE  # archived, not held
        again = fetch([])
        assert again == [(2, 2, 2)], again  # only the released record, delivered twice
        assert ack([(2, 2, [1])], final=True) == E.NONE
    finally:
        wire.close()


@pytest.mark.kafka_variant
def test_a_disconnect_releases_the_records_of_its_share_session(bootstrap: str) -> None:
    bs = bootstrap
    create_topic(bs, "dc", 1)
    set_group_configs(
        bs, "dg", share_auto_offset_reset="earliest", share_record_lock_duration_ms="30000"
    )
    produce(bs, "dc", [b"a", b"b", b"c"], 1)
    wire = Wire(bs)
    try:
        meta = wire.call(
            METADATA,
            12,
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="dc")],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
        topic_id = meta.topics[0].topic_id
        find_coordinator(wire, "dg")
        a, a_epoch = assigned_member(wire, "dg", "dc")
        b, _ = assigned_member(wire, "dg", "dc")
        other = Wire(bs)  # A's share session lives on this connection
        assert share_fetch(other, "dg", a, topic_id, 0, 5000) == [(0, 2, 1)]
        other.close()
        closed_at = time.monotonic()
        got: list[tuple[int, int, int]] = []
        session = 0
        while not got:
            # well before the 30 s lock: the disconnect released them (Kafka 4.4 as well)
            assert time.monotonic() < closed_at + 15, "A's records were not released"
            got = share_fetch(wire, "dg", b, topic_id, session, 500)
            session += 1
            assert heartbeat(wire, "dg", a, a_epoch, None).error_code == E.NONE  # A lives
        assert got == [(0, 2, 2)]
    finally:
        wire.close()


def assigned_member(wire: Wire, group: str, topic: str) -> tuple[str, int]:
    """A new member of ``group``, once it has partitions (Kafka initializes state first)."""
    member = uuid.uuid4().hex
    answer = join(wire, group, member, [topic])
    epoch = answer.member_epoch
    deadline = time.monotonic() + 60
    while answer.assignment is None or not answer.assignment.topic_partitions:
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)
        answer = heartbeat(wire, group, member, epoch, None)
        epoch = answer.member_epoch
    return member, epoch


def share_fetch(
    wire: Wire,
    group: str,
    member: str,
    topic_id: uuid.UUID,
    session: int,
    wait_ms: int,
    min_bytes: int = 1,
) -> list[tuple[int, int, int]]:
    """One ShareFetch of partition 0 (named only when opening the session): what it
    acquired, as ``(first, last, delivery count)``."""
    topics = [
        ShareFetchRequest.FetchTopic(
            topic_id=topic_id, partitions=[ShareFetchRequest.FetchPartition(partition_index=0)]
        )
    ]
    req = ShareFetchRequest(
        group_id=group, member_id=member, share_session_epoch=session, max_wait_ms=wait_ms,
        min_bytes=min_bytes, max_bytes=1 << 20, max_records=100, batch_size=100,
        topics=topics if session == 0 else [], forgotten_topics_data=[],
    )  # fmt: skip
    resp = wire.call(SHARE_FETCH, 1, req)
    assert resp.error_code == E.NONE, resp
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in resp.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


@pytest.mark.kafka_variant
def test_a_record_held_past_its_lock_comes_back_to_another_member(bootstrap: str) -> None:
    """A consumer that hangs (connection open, never acknowledging) loses its records
    when the lock expires (group.share.record.lock.duration.ms: 3 s here, 2 s on the
    Kafka reference); the next member gets them with delivery count 2."""
    bs = bootstrap
    create_topic(bs, "lk", 1)
    set_group_configs(bs, "lg", share_auto_offset_reset="earliest")
    produce(bs, "lk", [b"a", b"b"], 1)
    wire, held = Wire(bs), Wire(bs)
    try:
        meta = wire.call(
            METADATA,
            12,
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="lk")],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
        topic_id = meta.topics[0].topic_id
        find_coordinator(wire, "lg")
        a, a_epoch = assigned_member(wire, "lg", "lk")
        b, _ = assigned_member(wire, "lg", "lk")
        assert share_fetch(held, "lg", a, topic_id, 0, 5000) == [(0, 1, 1)]
        acquired_at = time.monotonic()
        assert share_fetch(wire, "lg", b, topic_id, 0, 0) == []  # locked to A
        got: list[tuple[int, int, int]] = []
        session = 1
        while not got:
            assert time.monotonic() < acquired_at + 30, "the lock never expired"
            got = share_fetch(wire, "lg", b, topic_id, session, 500)
            session += 1
            assert heartbeat(wire, "lg", a, a_epoch, None).error_code == E.NONE  # A lives
        assert got == [(0, 1, 2)]
        assert time.monotonic() - acquired_at >= 1.5  # not before the lock (2-3 s)
    finally:
        held.close()
        wire.close()


@pytest.mark.kafka_variant
def test_share_fetch_waits_for_min_bytes_then_takes_what_there_is(bootstrap: str) -> None:
    """ShareFetch honours min_bytes / max_wait_ms as Kafka 4.4's DelayedShareFetch: with
    fewer deliverable bytes than min_bytes it waits the whole max_wait_ms and then acquires
    what there is; with min_bytes 1 it answers at once."""
    bs = bootstrap
    create_topic(bs, "mb", 1)
    set_group_configs(bs, "mbg", share_auto_offset_reset="earliest")
    produce(bs, "mb", [b"small"], 1)
    wire = Wire(bs)
    try:
        meta = wire.call(
            METADATA,
            12,
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="mb")],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
        topic_id = meta.topics[0].topic_id
        find_coordinator(wire, "mbg")
        a, _ = assigned_member(wire, "mbg", "mb")
        started = time.monotonic()
        got = share_fetch(wire, "mbg", a, topic_id, 0, 2000, min_bytes=1 << 20)
        waited = time.monotonic() - started
        assert got == [(0, 0, 1)]
        assert waited >= 1.8, waited  # not answered before max_wait_ms
        produce(bs, "mb", [b"more"], 1)
        started = time.monotonic()
        got = []
        session = 1
        while not got:  # the record may need a moment to be visible to the share fetch
            got = share_fetch(wire, "mbg", a, topic_id, session, 10_000, min_bytes=1)
            session += 1
        assert got == [(1, 1, 1)]
        assert time.monotonic() - started < 5.0  # at once, not at the 10 s max_wait_ms
    finally:
        wire.close()


def coordinated(wire: Wire, api_key: int, version: int, request: Any) -> Any:
    """A DescribeShareGroupOffsets call, again while its group's coordinator is loading
    (Kafka answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a while)."""
    retriable = {E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE}
    deadline = time.monotonic() + 60
    while True:
        answer = wire.call(api_key, version, request)
        if answer.groups[0].error_code not in retriable:
            return answer
        assert time.monotonic() < deadline, answer
        time.sleep(0.2)


@pytest.mark.kafka_variant
def test_share_group_offsets_admin_errors(bootstrap: str) -> None:
    """DescribeShareGroupOffsets of an unknown group, AlterShareGroupOffsets of a group
    with a member and of an unknown topic: the same errors as Kafka 4.4."""

    bs = bootstrap
    create_topic(bs, "oa", 1)
    wire = Wire(bs)
    try:
        find_coordinator(wire, "oag")
        find_coordinator(wire, "no-such")  # Kafka loads its coordinator partition
        unknown = coordinated(wire, 90, 1, describe_offsets_request("no-such", None))
        assert (unknown.groups[0].error_code, unknown.groups[0].topics) == (E.NONE, [])
        named = coordinated(wire, 90, 1, describe_offsets_request("no-such", {"oa": [0]}))
        assert named.groups[0].error_code == E.NONE
        (partition,) = named.groups[0].topics[0].partitions
        assert (partition.error_code, partition.start_offset) == (E.NONE, -1)

        def alter(topic: str) -> Any:
            return wire.call(91, 0, alter_offsets_request("oag", {topic: {0: 0}}))

        missing = alter("oa-missing")
        assert missing.error_code == E.NONE
        assert missing.responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
        assigned_member(wire, "oag", "oa")
        busy = alter("oa")
        assert busy.error_code == E.NON_EMPTY_GROUP
    finally:
        wire.close()


@pytest.mark.kafka_variant
def test_a_fenced_members_records_come_back_with_their_count(
    bootstrap: str, request: pytest.FixtureRequest
) -> None:
    """A member that stops heartbeating (connection open, share session open) is fenced by
    the share session timeout (3 s on Riverbed here, 10 s on the Kafka reference), well
    before its locks expire (10 s on Riverbed, 20 s on Kafka).  Kafka 4.4 does not release
    the fenced member's records: they come back when the lock expires, with delivery count
    2 (~10 s on Riverbed, ~20 s on Kafka)."""
    bs = bootstrap
    session_ms, lock_ms = FENCE_TIMINGS[request.node.callspec.params["bootstrap"]]
    group_configs = {"share_record_lock_duration_ms": str(lock_ms)}
    if session_ms is not None:
        group_configs["share_session_timeout_ms"] = str(session_ms)
    create_topic(bs, "fz", 1)
    set_group_configs(bs, "fg", share_auto_offset_reset="earliest", **group_configs)
    produce(bs, "fz", [b"a"], 1)
    wire, held = Wire(bs), Wire(bs)
    try:
        meta = wire.call(
            METADATA,
            12,
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="fz")],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
        topic_id = meta.topics[0].topic_id
        find_coordinator(wire, "fg")
        a, _ = assigned_member(wire, "fg", "fz")
        b, b_epoch = assigned_member(wire, "fg", "fz")
        assert share_fetch(held, "fg", a, topic_id, 0, 5000) == [(0, 0, 1)]
        acquired_at = time.monotonic()
        got: list[tuple[int, int, int]] = []
        session = 0
        while not got:  # A never heartbeats again; B does
            assert time.monotonic() < acquired_at + 60, "A's record never came back"
            got = share_fetch(wire, "fg", b, topic_id, session, 500)
            session += 1
            beat = heartbeat(wire, "fg", b, b_epoch, None)
            b_epoch = beat.member_epoch or b_epoch
        came_back_after = time.monotonic() - acquired_at
        assert got == [(0, 0, 2)], (got, came_back_after)
        # at the lock's expiry, not the fence
        assert came_back_after >= lock_ms * 0.75 / 1000, came_back_after
    finally:
        held.close()
        wire.close()


def _offsets_admin_observations(bs: str, past_end: bool) -> dict[str, Any]:
    """The share group offsets admin's answers to one scenario, topic ids as booleans:
    Alter of a new group, Describe (null and named topics, an unknown topic and partition,
    a classic group's id), Delete (an unknown group and topic, then the group's topic, then
    with a member), Describe after the Delete.  ``past_end`` adds partition 7 of the 2-partition
    topic to the named Describes: Kafka 4.4 answers it "no state" when it answers, but at times
    it does not answer within 30 s (its share coordinator's partition for that key)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as Tp

    from riverbed.protocol.messages.generated.delete_share_group_offsets_request import (
        DeleteShareGroupOffsetsRequest as Delete,
    )

    create_topic(bs, "ob", 2)
    produce(bs, "ob", [f"v{i}".encode() for i in range(10)], 2)  # 5 per partition
    classic = Consumer({"bootstrap.servers": bs, "group.id": "ob-classic"})
    try:
        classic.commit(offsets=[Tp("ob", 0, 1)], asynchronous=False)
    finally:
        classic.close()

    def parts(ps: Any) -> list[tuple[Any, ...]]:
        return [
            (p.partition_index, p.error_code, p.start_offset, p.leader_epoch, p.lag) for p in ps
        ]

    def describe(group: str, topics: dict[str, list[int]] | None) -> Any:
        [g] = coordinated(wire, 90, 1, describe_offsets_request(group, topics)).groups
        shown = [(t.topic_name, t.topic_id != ZERO_UUID, parts(t.partitions)) for t in g.topics]
        return (g.error_code, shown)

    def alter(group: str, offsets: dict[str, dict[int, int]]) -> Any:
        a = wire.call(91, 0, alter_offsets_request(group, offsets))
        return (
            a.error_code,
            [
                (
                    t.topic_name,
                    t.topic_id != ZERO_UUID,
                    [(p.partition_index, p.error_code) for p in t.partitions],
                )
                for t in a.responses
            ],
        )

    def delete(group: str, topics: list[str]) -> Any:
        req = Delete(
            group_id=group,
            topics=[Delete.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics],
        )
        d = wire.call(92, 0, req)
        return (
            d.error_code,
            [(t.topic_name, t.topic_id != ZERO_UUID, t.error_code) for t in d.responses],
        )

    extra = [7] if past_end else []
    seen: dict[str, Any] = {}
    wire = Wire(bs)
    try:
        for group in ("ob-g", "ob-none", "ob-classic", "ob-neg", "ob-far"):
            find_coordinator(wire, group)
        seen["alter"] = alter("ob-g", {"ob": {0: 2, 1: 4}})
        seen["alter_bad"] = alter("ob-g", {"ob": {5: 0}, "ob-missing": {0: 0}})
        seen["alter_classic"] = alter("ob-classic", {"ob": {0: 0}})
        seen["alter_classic_missing"] = alter("ob-classic", {"ob": {0: 0}, "ob-missing": {0: 0}})
        seen["alter_negative"] = alter("ob-neg", {"ob": {0: -1, 1: -5}})
        seen["describe_neg"] = describe("ob-neg", None)
        seen["alter_past_end"] = alter("ob-far", {"ob": {0: 100}})
        seen["describe_past_end"] = describe("ob-far", None)
        seen["describe_all"] = describe("ob-g", None)
        seen["describe_named"] = describe("ob-g", {"ob": [1, 0, *extra], "ob-missing": [0]})
        seen["describe_classic"] = describe("ob-classic", None)
        seen["describe_classic_named"] = describe("ob-classic", {"ob": [0]})
        seen["describe_missing_first"] = describe("ob-g", {"ob-missing": [0], "ob": [*extra, 1]})
        seen["delete_unknown_group"] = delete("ob-none", ["ob"])
        seen["delete_classic"] = delete("ob-classic", ["ob"])
        seen["delete"] = delete("ob-g", ["ob-missing", "ob"])
        seen["after_delete_all"] = describe("ob-g", None)
        seen["after_delete_named"] = describe("ob-g", {"ob": [0]})
        seen["realter"] = alter("ob-g", {"ob": {0: 1}})
        assigned_member(wire, "ob-g", "ob")
        seen["delete_busy"] = delete("ob-g", ["ob"])
        seen["delete_busy_missing"] = delete("ob-g", ["ob-missing", "ob"])
        seen["alter_busy"] = alter("ob-g", {"ob-missing": {0: 0}, "ob": {0: 0}})
    finally:
        wire.close()
    return seen


# What Kafka 4.4 answers (``-m kafka`` checks it): ``(error, [(topic, has id, ...)])``.
OFFSETS_ADMIN_ANSWERS: dict[str, Any] = {
    "alter": (0, [("ob", True, [(0, 0), (1, 0)])]),
    "alter_bad": (0, [("ob-missing", False, [(0, 3)]), ("ob", True, [(5, 3)])]),
    "alter_classic": (69, []),
    "alter_classic_missing": (69, []),
    "alter_negative": (0, [("ob", True, [(0, 0), (1, 0)])]),
    "describe_neg": (0, [("ob", True, [(0, 0, -1, 0, -1), (1, 0, -5, 0, 10)])]),
    "describe_all": (0, [("ob", True, [(0, 0, 2, 0, 3), (1, 0, 4, 0, 1)])]),
    "alter_past_end": (0, [("ob", True, [(0, 0)])]),
    "describe_past_end": (0, [("ob", True, [(0, 0, 100, 0, -95)])]),  # lag < 0
    "describe_named": (
        0,
        [
            ("ob", True, [(0, 0, 2, 0, 3), (1, 0, 4, 0, 1)]),
            ("ob-missing", False, [(0, 0, -1, 0, -1)]),
        ],
    ),
    "describe_classic": (0, []),
    "describe_classic_named": (0, [("ob", True, [(0, 0, -1, 0, -1)])]),
    "describe_missing_first": (
        0,
        [
            ("ob", True, [(1, 0, 4, 0, 1)]),
            ("ob-missing", False, [(0, 0, -1, 0, -1)]),
        ],
    ),
    "delete_unknown_group": (69, []),
    "delete_classic": (69, []),
    "delete": (0, [("ob", True, 0), ("ob-missing", False, 3)]),
    "after_delete_all": (0, []),
    "after_delete_named": (0, [("ob", True, [(0, 0, -1, 0, -1)])]),
    "realter": (0, [("ob", True, [(0, 0)])]),
    "delete_busy": (68, []),
    "delete_busy_missing": (68, []),
    "alter_busy": (68, []),
}
# Deliberate difference: Kafka 4.4 stores a negative start offset (-1 reads back as no
# state, -5 as start -5, lag 10); Riverbed refuses it, per partition.
RIVERBED_ANSWERS = {
    # with partition 7 (past the topic's end) named: no state, in ascending order
    "describe_named": (
        0,
        [
            ("ob", True, [(0, 0, 2, 0, 3), (1, 0, 4, 0, 1), (7, 0, -1, 0, -1)]),
            ("ob-missing", False, [(0, 0, -1, 0, -1)]),
        ],
    ),
    "describe_missing_first": (
        0,
        [
            ("ob", True, [(1, 0, 4, 0, 1), (7, 0, -1, 0, -1)]),
            ("ob-missing", False, [(0, 0, -1, 0, -1)]),
        ],
    ),
    "alter_negative": (0, [("ob", True, [(0, 42), (1, 42)])]),
    "describe_neg": (0, []),
}


@pytest.mark.kafka_variant
def test_share_group_offsets_alter_describe_delete(
    bootstrap: str, request: pytest.FixtureRequest
) -> None:
    """The offsets admin's answers, errors and their order, as Kafka 4.4's (~10 s)."""
    riverbed = request.node.callspec.params["bootstrap"] == "riverbed"
    seen = _offsets_admin_observations(bootstrap, past_end=riverbed)
    expected = dict(OFFSETS_ADMIN_ANSWERS)
    if riverbed:
        expected |= RIVERBED_ANSWERS
    assert {k: v for k, v in seen.items() if v != expected[k]} == {}
    assert seen.keys() == expected.keys()
