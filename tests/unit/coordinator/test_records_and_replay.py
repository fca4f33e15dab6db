"""__consumer_offsets formats, partition routing, and state rebuilt by replay."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from riverbed.coordinator import (
    HeartbeatRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    java_string_hash,
    partition_for,
)
from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.coordinator.offsets_topic_records import (
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from riverbed.coordinator.state import ClassicGroupState
from riverbed.coordinator.testing import CoordinatorDriver


def test_java_hash_and_partition_for_match_kafka() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert java_string_hash("é😀") == ((0xE9 * 31 + 0xD83D) * 31 + 0xDE00)


def test_offset_commit_key_bytes_are_kafkas() -> None:
    key = encode_offset_commit_key(OffsetCommitKey("g", "t", 3))
    assert key == struct.pack(">hh1sh1si", 1, 1, b"g", 1, b"t", 3)
    assert decode_key(key) == OffsetCommitKey("g", "t", 3)
    value = encode_offset_commit_value(OffsetCommitValue(10, 2, "m", 99))
    assert value == struct.pack(">hqih1sq", 3, 10, 2, 1, b"m", 99)


_text = st.text(max_size=20)


@given(
    st.builds(
        OffsetCommitValue,
        st.integers(-1, 2**63 - 1),
        st.integers(-1, 2**31 - 1),
        _text,
        st.integers(0, 2**63 - 1),
    )
)
def test_offset_commit_value_round_trips(value: OffsetCommitValue) -> None:
    assert decode_offset_commit_value(encode_offset_commit_value(value)) == value


_member = st.builds(
    MemberMetadata,
    _text,
    st.none() | _text,
    _text,
    _text,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.binary(),
    st.binary(),
)


@given(
    st.builds(
        GroupMetadataValue,
        _text,
        st.integers(0, 2**31 - 1),
        st.none() | _text,
        st.none() | _text,
        st.integers(-1, 2**62),
        st.lists(_member, max_size=4).map(tuple),
    )
)
def test_group_metadata_value_round_trips(value: GroupMetadataValue) -> None:
    assert decode_group_metadata_value(encode_group_metadata_value(value)) == value


def test_replay_rebuilds_groups_and_offsets() -> None:
    d = CoordinatorDriver()
    p1 = d.join("g", instance_id="i1", topics=("t",))
    p2 = d.join("g", instance_id="i2", topics=("t",))
    d.advance(6000)  # initial delay, extended once for the second member
    r1, r2 = d.answers[p1.token], d.answers[p2.token]  # type: ignore[union-attr]
    assert isinstance(r1, JoinGroupResponse) and isinstance(r2, JoinGroupResponse)
    d.sync("g", r2.member_id, 1, instance_id="i2")
    d.sync("g", r1.member_id, 1, {r1.member_id: b"one", r2.member_id: b"two"}, instance_id="i1")
    for i in range(3):
        d.handle(
            d.coordinator.offset_commit(
                OffsetCommitRequest(
                    "g", (OffsetCommitPartition("t", i, 100 + i),), 1, r1.member_id, "i1"
                ),
                d.now,
            )
        )
    d.handle(
        d.coordinator.offset_commit(
            OffsetCommitRequest("simple", (OffsetCommitPartition("x", 0, 5),)), d.now
        )
    )
    fresh = d.replayed()
    assert fresh.snapshot() == d.coordinator.snapshot()
    g = fresh.group("g")
    assert isinstance(g, ClassicGroup) and g.state is ClassicGroupState.STABLE
    assert {m.assignment for m in g.members.values()} == {b"one", b"two"}
    # the rebuilt group keeps serving: members heartbeat with their generation
    hb = fresh.heartbeat(HeartbeatRequest("g", 1, r2.member_id, "i2"), d.now).response
    assert hb.error_code == 0
    # everybody leaves → generation 2, Empty, persisted; replay agrees again
    d.handle(
        d.coordinator.leave_group(
            LeaveGroupRequest("g", (MemberIdentity("", "i1"), MemberIdentity("", "i2"))), d.now
        )
    )
    again = d.replayed()
    assert again.snapshot() == d.coordinator.snapshot()
    eg = again.group("g")
    assert isinstance(eg, ClassicGroup) and eg.state is ClassicGroupState.EMPTY
    assert eg.generation_id == 2
