"""OffsetCommit/Fetch/Delete, expiration, ListGroups/DescribeGroups/DeleteGroups."""

from __future__ import annotations

from riverbed.coordinator import (
    GroupCoordinatorConfig,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    TopicPartition,
)
from riverbed.coordinator.testing import CoordinatorDriver
from riverbed.protocol.error_codes import ErrorCode

G = "g"


def _commit(
    d: CoordinatorDriver,
    offset: int,
    gen: int = -1,
    member: str = "",
    instance: str | None = None,
    topic: str = "t",
    metadata: str = "m",
) -> ErrorCode:
    req = OffsetCommitRequest(
        G, (OffsetCommitPartition(topic, 0, offset, 7, metadata),), gen, member, instance
    )
    return d.handle(d.coordinator.offset_commit(req, d.now)).partitions[0].error_code


def _fetch(d: CoordinatorDriver, topic: str = "t") -> int:
    r = d.coordinator.offset_fetch(OffsetFetchRequest(G, (TopicPartition(topic, 0),)))
    return r.partitions[0].committed_offset


def _stable_one(d: CoordinatorDriver) -> tuple[str, int]:
    p = d.join(G, instance_id="i", topics=("t",))
    d.advance(3000)
    r = d.answers[p.token]  # type: ignore[union-attr]
    assert isinstance(r, JoinGroupResponse)
    d.sync(G, r.member_id, r.generation_id, {r.member_id: b""}, instance_id="i")
    return r.member_id, r.generation_id


def test_simple_commit_creates_an_empty_group_and_fetch_returns_it() -> None:
    d = CoordinatorDriver()
    assert _commit(d, 42) is ErrorCode.NONE
    got = d.coordinator.offset_fetch(OffsetFetchRequest(G)).partitions
    assert [
        (p.topic, p.partition, p.committed_offset, p.committed_leader_epoch, p.metadata)
        for p in got
    ] == [("t", 0, 42, 7, "m")]
    assert _fetch(d, "unknown") == -1
    assert [g.group_state for g in d.coordinator.list_groups()] == ["Empty"]
    assert _commit(d, 1, metadata="x" * 5000) is ErrorCode.OFFSET_METADATA_TOO_LARGE


def test_commit_validation_for_a_live_classic_group() -> None:
    d = CoordinatorDriver()
    member, gen = _stable_one(d)
    assert _commit(d, 1) is ErrorCode.UNKNOWN_MEMBER_ID  # simple commit, group not Empty
    assert _commit(d, 1, gen + 1, member, "i") is ErrorCode.ILLEGAL_GENERATION
    assert _commit(d, 1, gen, "stranger") is ErrorCode.UNKNOWN_MEMBER_ID
    assert _commit(d, 1, gen, "stranger", "i") is ErrorCode.FENCED_INSTANCE_ID
    assert _commit(d, 5, gen, member, "i") is ErrorCode.NONE
    assert _fetch(d) == 5
    # a generation-aware commit to a group that does not exist
    assert _commit(CoordinatorDriver(), 1, 3) is ErrorCode.ILLEGAL_GENERATION


def test_offset_delete_refuses_subscribed_topics() -> None:
    d = CoordinatorDriver()
    member, gen = _stable_one(d)
    _commit(d, 5, gen, member, "i", topic="t")
    _commit(d, 6, gen, member, "i", topic="old")
    r = d.handle(
        d.coordinator.offset_delete(
            OffsetDeleteRequest(G, (TopicPartition("t", 0), TopicPartition("old", 0)))
        )
    )
    assert [p.error_code for p in r.partitions] == [
        ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        ErrorCode.NONE,
    ]
    assert _fetch(d, "old") == -1 and _fetch(d, "t") == 5
    assert d.log[-1].value is None  # the tombstone
    missing = d.coordinator.offset_delete(OffsetDeleteRequest("nope", ()))
    assert missing.response.error_code is ErrorCode.GROUP_ID_NOT_FOUND


def test_offsets_of_an_empty_group_expire_after_retention_and_the_group_goes() -> None:
    day = 24 * 3_600_000
    d = CoordinatorDriver(
        GroupCoordinatorConfig(offsets_retention_ms=day, offsets_retention_check_interval_ms=60_000)
    )
    d.advance(0)
    _commit(d, 9)
    d.advance(day - 60_000)
    assert _fetch(d) == 9
    d.advance(60_000)
    assert _fetch(d) == -1
    assert d.coordinator.group_ids() == []
    assert [r.value for r in d.log[-2:]] == [None, None]  # offset + group tombstones


def test_list_describe_and_delete_groups() -> None:
    d = CoordinatorDriver(topics={"t": 1})
    member, _ = _stable_one(d)
    d.cg_heartbeat("cg", "A", 0, topics=("t",))
    listed = d.coordinator.list_groups()
    assert [(g.group_id, g.group_state, g.group_type) for g in listed] == [
        ("cg", "Stable", "consumer"),
        (G, "Stable", "classic"),
    ]
    assert [
        g.group_id
        for g in d.coordinator.list_groups(states_filter=["stable"], types_filter=["classic"])
    ] == [G]
    desc = d.coordinator.describe_groups([G, "nope"])
    assert desc[0].group_state == "Stable" and desc[0].protocol_data == "range"
    assert desc[0].members[0].member_id == member
    assert desc[1].group_state == "Dead"
    deleted = d.handle(d.coordinator.delete_groups([G, "nope"], d.now))
    assert [x.error_code for x in deleted] == [
        ErrorCode.NON_EMPTY_GROUP,
        ErrorCode.GROUP_ID_NOT_FOUND,
    ]
    d2 = CoordinatorDriver()
    _commit(d2, 3)
    assert [x.error_code for x in d2.handle(d2.coordinator.delete_groups([G], d2.now))] == [
        ErrorCode.NONE
    ]
    assert d2.coordinator.group_ids() == [] and [r.value for r in d2.log[-2:]] == [None, None]
