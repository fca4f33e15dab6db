"""KIP-848 groups persisted in __consumer_offsets: Kafka's record formats (key versions
3-8), the write-as-diff, and members continuing with their epochs after a replay."""

from __future__ import annotations

import struct
import uuid

from hypothesis import given
from hypothesis import strategies as st

from riverbed.coordinator import ConsumerGroupState, MemberState
from riverbed.coordinator.api import OffsetCommitPartition, OffsetCommitRequest
from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.coordinator.consumer_group_records import (
    AssignmentEpochs,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRecordKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    TopicMetadataEntry,
    decode_value,
    encode_key,
    encode_value,
    key_version_of,
)
from riverbed.coordinator.offsets_topic_records import CoordinatorRecord, decode_key
from riverbed.coordinator.testing import CoordinatorDriver
from riverbed.protocol.error_codes import ErrorCode

G = "cg"


def _fs(*ps: int) -> frozenset[int]:
    return frozenset(ps)


def _group(d: CoordinatorDriver) -> ConsumerGroup:
    g = d.coordinator.group(G)
    assert isinstance(g, ConsumerGroup)
    return g


def _restart(d: CoordinatorDriver) -> None:
    """The broker restarts: a fresh coordinator replays the log and goes on with it."""
    before = d.coordinator.snapshot()
    d.coordinator = d.replayed()
    assert d.coordinator.snapshot() == before


# -- formats -----------------------------------------------------------------------------


def test_keys_are_kafkas_bytes() -> None:
    key = encode_key(ConsumerGroupRecordKey(3, "g"))
    assert key == struct.pack(">hh1s", 3, 1, b"g")
    member_key = encode_key(ConsumerGroupRecordKey(8, "g", "m1"))
    assert member_key == struct.pack(">hh1sh2s", 8, 1, b"g", 2, b"m1")
    assert decode_key(member_key) == ConsumerGroupRecordKey(8, "g", "m1")
    # value version 0, epoch, no tagged fields
    assert encode_value(ConsumerGroupMetadataValue(7)) == struct.pack(">hib", 0, 7, 0)


_names = st.text(max_size=8)
_ids = st.uuids()
_parts = st.lists(
    st.tuples(
        _ids, st.lists(st.integers(0, 2**31 - 1), max_size=4).map(lambda ps: tuple(sorted(set(ps))))
    ),
    max_size=3,
).map(tuple)


@st.composite
def _with_epochs(draw: st.DrawFn) -> ConsumerGroupCurrentMemberAssignmentValue:
    """A record 8 carrying AssignmentEpochs (KIP-1251) for some or all of its entries."""
    assigned, pending = draw(_parts), draw(_parts)

    def epochs(parts: tuple[tuple[uuid.UUID, tuple[int, ...]], ...]) -> AssignmentEpochs:
        out = tuple(
            draw(st.none() | st.tuples(*(st.integers(0, 2**31 - 1) for _ in ps))) for _, ps in parts
        )
        return out if any(e is not None for e in out) else ()

    return ConsumerGroupCurrentMemberAssignmentValue(
        draw(st.integers(-2, 2**31 - 1)),
        draw(st.integers(-2, 2**31 - 1)),
        draw(st.integers(0, 2)),
        assigned,
        pending,
        epochs(assigned),
        epochs(pending),
    )


_values: st.SearchStrategy[ConsumerGroupValue] = st.one_of(
    st.builds(ConsumerGroupMetadataValue, st.integers(-1, 2**31 - 1)),
    st.builds(
        ConsumerGroupPartitionMetadataValue,
        st.lists(
            st.builds(TopicMetadataEntry, _ids, _names, st.integers(0, 10**6)), max_size=3
        ).map(tuple),
    ),
    st.builds(
        ConsumerGroupMemberMetadataValue,
        st.none() | _names,
        st.none() | _names,
        _names,
        _names,
        st.lists(_names, max_size=3).map(tuple),
        st.none() | _names,
        st.integers(-1, 2**31 - 1),
        st.none() | _names,
    ),
    st.builds(ConsumerGroupTargetAssignmentMetadataValue, st.integers(0, 2**31 - 1)),
    st.builds(ConsumerGroupTargetAssignmentMemberValue, _parts),
    st.builds(
        ConsumerGroupCurrentMemberAssignmentValue,
        st.integers(-2, 2**31 - 1),
        st.integers(-2, 2**31 - 1),
        st.integers(0, 2),
        _parts,
        _parts,
    ),
    _with_epochs(),
)


@given(_values)
def test_values_round_trip(value: ConsumerGroupValue) -> None:
    assert decode_value(key_version_of(value), encode_value(value)) == value


def test_unknown_tagged_fields_are_skipped() -> None:
    raw = struct.pack(">hi", 0, 9) + bytes([1, 0, 8]) + struct.pack(">q", 42)  # tag 0: hash
    assert decode_value(3, raw) == ConsumerGroupMetadataValue(9)


# -- writing and replay ----------------------------------------------------------------


def test_a_reconciling_group_continues_after_a_restart() -> None:
    """
    A joins, owns t-0..3 @1;  B joins: target A{0,1} B{2,3} @2
    A heartbeats -> UNREVOKED_PARTITIONS (must give up 2,3), B UNRELEASED
    --- restart (replay) ---
    A acks owned={0,1} with its *old* epoch 1 -> STABLE @2;  B gets {2,3}
    """
    d = CoordinatorDriver(topics={"t": 4})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    d.cg_heartbeat(G, "B", 0, topics=("t",))
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1, 2, 3)})
    assert _group(d).members["A"].state is MemberState.UNREVOKED_PARTITIONS
    _restart(d)
    group = _group(d)
    assert group.group_epoch == 2 and group.assignment_epoch == 2
    assert group.members["A"].pending_revocation == {"t": _fs(2, 3)}
    assert group.partition_owner[("t", 3)] == "A"
    a = d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})
    assert a.error_code is ErrorCode.NONE and a.member_epoch == 2
    b = d.cg_heartbeat(G, "B", 2)
    assert b.error_code is ErrorCode.NONE and b.assignment == {"t": _fs(2, 3)}
    assert _group(d).state is ConsumerGroupState.STABLE
    _restart(d)
    assert d.cg_heartbeat(G, "B", 2).error_code is ErrorCode.NONE
    assert d.cg_heartbeat(G, "A", 2).error_code is ErrorCode.NONE


def test_an_unchanged_heartbeat_writes_nothing() -> None:
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    written = len(d.log)
    assert written > 0
    d.cg_heartbeat(G, "A", 1)
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})
    assert len(d.log) == written


def test_fenced_member_and_deleted_group_leave_tombstones() -> None:
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    d.cg_heartbeat(G, "B", 0, topics=("t",))
    d.advance(30_000)
    d.cg_heartbeat(G, "A", 1)  # A stays alive; B's session (45 s) lapses
    d.advance(20_000)
    assert set(_group(d).members) == {"A"}
    _restart(d)
    assert set(_group(d).members) == {"A"}
    assert d.cg_heartbeat(G, "A", -1).error_code is ErrorCode.NONE  # leaves
    deleted = d.handle(d.coordinator.delete_groups([G], d.now))
    assert deleted[0].error_code is ErrorCode.NONE
    assert d.log[-1].value is None and decode_key(d.log[-1].key) == ConsumerGroupRecordKey(3, G)
    _restart(d)
    assert d.coordinator.group(G) is None


def test_parked_static_member_survives_a_restart_and_takes_its_place_back() -> None:
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",), instance_id="i-1")
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})
    d.cg_heartbeat(G, "A", -2, instance_id="i-1")
    _restart(d)
    assert _group(d).static_members == {"i-1": "A"}
    back = d.cg_heartbeat(G, "A2", 0, topics=("t",), instance_id="i-1")
    assert back.error_code is ErrorCode.NONE
    assert back.member_epoch == 1 and back.assignment == {"t": _fs(0, 1)}
    _restart(d)
    assert set(_group(d).members) == {"A2"}


def test_a_deleted_topic_drops_its_partitions_on_load() -> None:
    d = CoordinatorDriver(topics={"t": 2, "u": 1})
    d.cg_heartbeat(G, "A", 0, topics=("t", "u"))
    del d.topics.partitions["u"]
    d.coordinator = d.replayed()
    assert _group(d).members["A"].assigned == {"t": _fs(0, 1)}
    assert uuid.uuid5(uuid.NAMESPACE_URL, "u") not in {
        d.topics.topic_id(t) for t in d.topics.topic_names()
    }


def test_converting_an_empty_consumer_group_to_classic_tombstones_it() -> None:
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    d.cg_heartbeat(G, "A", -1)
    joined = d.join(G)
    assert not isinstance(joined, ConsumerGroup)
    fresh = d.replayed()
    assert not isinstance(fresh.group(G), ConsumerGroup)


def test_assignment_epochs_survive_a_restart() -> None:
    """Record 8 carries each partition's assignment epoch (KIP-1251): after a restart A
    may still commit t-0 (assigned at epoch 1) with epoch 1, not t-2 (revoked)."""
    d = CoordinatorDriver(topics={"t": 4})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    d.cg_heartbeat(G, "B", 0, topics=("t",))
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1, 2, 3)})
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})
    d.cg_heartbeat(G, "B", 2)
    epochs = dict(_group(d).members["A"].assignment_epochs)
    assert epochs == {("t", 0): 1, ("t", 1): 1}
    _restart(d)
    assert _group(d).members["A"].assignment_epochs == epochs
    assert _group(d).members["B"].assignment_epochs == {("t", 2): 2, ("t", 3): 2}

    def commit(partition: int) -> ErrorCode:
        req = OffsetCommitRequest(G, (OffsetCommitPartition("t", partition, 10),), 1, "A")
        return d.handle(d.coordinator.offset_commit(req, d.now)).partitions[0].error_code

    assert commit(0) is ErrorCode.NONE
    assert commit(2) is ErrorCode.STALE_MEMBER_EPOCH


def test_a_record_without_assignment_epochs_loads_them_as_the_member_epoch() -> None:
    """Records written before KIP-1251 (older Riverbed, Kafka < 4.3) carry none."""
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    topic_id = d.topics.topic_id("t")
    assert topic_id is not None
    old = ConsumerGroupCurrentMemberAssignmentValue(1, 0, 0, ((topic_id, (0, 1)),), ())
    d.log.append(
        CoordinatorRecord(G, encode_key(ConsumerGroupRecordKey(8, G, "A")), encode_value(old))
    )
    d.coordinator = d.replayed()
    assert _group(d).members["A"].assignment_epochs == {("t", 0): 1, ("t", 1): 1}
