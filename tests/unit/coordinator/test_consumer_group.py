"""KIP-848 ConsumerGroupHeartbeat: epochs, target assignment, revocation before assignment."""

from __future__ import annotations

from riverbed.coordinator import ConsumerGroupState, MemberState
from riverbed.coordinator.api import OffsetCommitPartition, OffsetCommitRequest
from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.coordinator.testing import CoordinatorDriver
from riverbed.protocol.error_codes import ErrorCode

G = "cg"


def _fs(*ps: int) -> frozenset[int]:
    return frozenset(ps)


def _group(d: CoordinatorDriver) -> ConsumerGroup:
    g = d.coordinator.group(G)
    assert isinstance(g, ConsumerGroup)
    return g


def test_second_member_gets_partitions_only_after_first_revokes() -> None:
    """
    A joins                 epoch 1: A owns t-0..3
    B joins                 group epoch 2, target A {0,1} B {2,3}
    B (first hb)            UNRELEASED_PARTITIONS at epoch 2, owns {} (A still holds 2,3)
    A heartbeats            UNREVOKED_PARTITIONS, keeps {0,1}, still at epoch 1
    B heartbeats            still nothing: 2,3 not released
    A acks owned={0,1}      STABLE at epoch 2
    B heartbeats            STABLE, owns {2,3}
    """
    d = CoordinatorDriver(topics={"t": 4})
    a = d.cg_heartbeat(G, "A", 0, topics=("t",))
    assert a.error_code is ErrorCode.NONE and a.member_epoch == 1
    assert a.assignment == {"t": _fs(0, 1, 2, 3)}
    b = d.cg_heartbeat(G, "B", 0, topics=("t",))
    assert b.member_epoch == 2 and b.assignment == {}
    assert _group(d).members["B"].state is MemberState.UNRELEASED_PARTITIONS
    a = d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1, 2, 3)})
    assert a.member_epoch == 1 and a.assignment == {"t": _fs(0, 1)}
    assert _group(d).members["A"].state is MemberState.UNREVOKED_PARTITIONS
    assert _group(d).state is ConsumerGroupState.RECONCILING
    b = d.cg_heartbeat(G, "B", 2)
    assert b.assignment is None  # unchanged: still waiting
    a = d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})
    assert a.member_epoch == 2 and _group(d).members["A"].state is MemberState.STABLE
    b = d.cg_heartbeat(G, "B", 2)
    assert b.assignment == {"t": _fs(2, 3)}
    assert _group(d).state is ConsumerGroupState.STABLE
    desc = d.coordinator.consumer_group_describe([G])[0]
    assert desc.group_state == "Stable" and desc.group_epoch == 2
    assert {m.member_id: m.assignment for m in desc.members} == {
        "A": {"t": _fs(0, 1)},
        "B": {"t": _fs(2, 3)},
    }


def test_epoch_fencing_and_unknown_member() -> None:
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    assert d.cg_heartbeat(G, "A", 5).error_code is ErrorCode.FENCED_MEMBER_EPOCH
    assert d.cg_heartbeat(G, "Z", 1).error_code is ErrorCode.UNKNOWN_MEMBER_ID
    d.cg_heartbeat(G, "B", 0, topics=("t",))
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})  # revoking
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0)})  # done → epoch 2, previous 1
    # a retried heartbeat with the previous epoch and a subset of partitions is accepted
    assert d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0)}).error_code is ErrorCode.NONE
    assert d.cg_heartbeat(G, "A", 0, topics=("t",)).error_code is ErrorCode.NONE  # rejoin
    bad = d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})
    assert bad.error_code is ErrorCode.FENCED_MEMBER_EPOCH


def test_leave_session_timeout_and_rebalance_timeout_fence_members() -> None:
    d = CoordinatorDriver(topics={"t": 4})
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    d.cg_heartbeat(G, "B", 0, topics=("t",))
    left = d.cg_heartbeat(G, "B", -1)
    assert left.member_epoch == -1 and "B" not in _group(d).members
    # A heartbeats: the new target gives it everything back
    r = d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1, 2, 3)})
    assert r.member_epoch == 3 and r.assignment is None  # still owns all four
    d.cg_heartbeat(G, "C", 0, topics=("t",))
    d.cg_heartbeat(G, "A", 3, owned={"t": _fs(0, 1, 2, 3)}, rebalance_timeout_ms=10_000)
    assert _group(d).members["A"].state is MemberState.UNREVOKED_PARTITIONS
    d.advance(10_000)  # A never acks the revocation → fenced; C keeps its session
    assert "A" not in _group(d).members
    d.advance(45_000)  # C silent for the whole session → fenced too
    assert _group(d).state is ConsumerGroupState.EMPTY


def test_static_member_temporary_leave_and_rejoin_keeps_its_partitions() -> None:
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",), instance_id="i")
    epoch = _group(d).group_epoch
    d.cg_heartbeat(G, "A", -2, instance_id="i")
    clash = d.cg_heartbeat(G, "A2", 0, topics=("t",), instance_id="j")
    assert clash.error_code is ErrorCode.NONE
    r = d.cg_heartbeat(G, "A3", 0, topics=("t",), instance_id="i")
    assert r.error_code is ErrorCode.NONE and "A" not in _group(d).members
    # "i" is held by A3 now; another process with the same instance id is refused
    dup = d.cg_heartbeat(G, "A4", 0, topics=("t",), instance_id="i")
    assert dup.error_code is ErrorCode.UNRELEASED_INSTANCE_ID
    assert _group(d).group_epoch >= epoch


def test_range_assignor_and_unsupported_assignor() -> None:
    d = CoordinatorDriver(topics={"t": 3, "u": 3})
    d.cg_heartbeat(G, "A", 0, topics=("t", "u"), assignor="range")
    d.cg_heartbeat(G, "B", 0, topics=("t", "u"), assignor="range")
    target = _group(d).target
    assert target == {"A": {"t": _fs(0, 1), "u": _fs(0, 1)}, "B": {"t": _fs(2), "u": _fs(2)}}
    bad = d.cg_heartbeat(G, "C", 0, topics=("t",), assignor="nope")
    assert bad.error_code is ErrorCode.UNSUPPORTED_ASSIGNOR


def test_new_partitions_bump_the_group_epoch() -> None:
    d = CoordinatorDriver(topics={"t": 1})
    r = d.cg_heartbeat(G, "A", 0, topics=("t",))
    d.topics.partitions["t"] = 3
    r = d.cg_heartbeat(G, "A", r.member_epoch)
    assert r.member_epoch == 2 and r.assignment == {"t": _fs(0, 1, 2)}


def _commit(d: CoordinatorDriver, member: str, epoch: int, *partitions: int) -> set[ErrorCode]:
    req = OffsetCommitRequest(
        G, tuple(OffsetCommitPartition("t", p, 10) for p in partitions), epoch, member
    )
    return {r.error_code for r in d.handle(d.coordinator.offset_commit(req, d.now)).partitions}


def _a_kept_0_and_1_when_b_joined(d: CoordinatorDriver) -> None:
    """A: t-0..3 at epoch 1, keeps t-0, t-1 and reaches epoch 2; B: t-2, t-3 at epoch 2."""
    d.cg_heartbeat(G, "A", 0, topics=("t",))
    d.cg_heartbeat(G, "B", 0, topics=("t",))
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1, 2, 3)})
    d.cg_heartbeat(G, "A", 1, owned={"t": _fs(0, 1)})
    d.cg_heartbeat(G, "B", 2)
    members = _group(d).members
    assert (members["A"].member_epoch, members["A"].assigned) == (2, {"t": _fs(0, 1)})
    assert (members["B"].member_epoch, members["B"].assigned) == (2, {"t": _fs(2, 3)})


def test_an_older_epoch_commits_only_partitions_assigned_at_or_before_it() -> None:
    """KIP-1251 (Kafka 4.3+): assignment epoch <= commit epoch <= member epoch, for every
    partition of the request; at the member's own epoch anything goes, as in Kafka."""
    d = CoordinatorDriver(topics={"t": 4})
    _a_kept_0_and_1_when_b_joined(d)
    assert _commit(d, "A", 1, 0, 1) == {ErrorCode.NONE}  # a commit that raced the bump
    assert _commit(d, "A", 1, 0, 2) == {ErrorCode.STALE_MEMBER_EPOCH}  # t-2 left A
    assert _commit(d, "A", 3, 0) == {ErrorCode.STALE_MEMBER_EPOCH}  # newer than A's
    assert _commit(d, "A", 2, 2) == {ErrorCode.NONE}
    assert _commit(d, "B", 1, 2) == {ErrorCode.STALE_MEMBER_EPOCH}  # B got t-2 at 2
    assert _commit(d, "Z", 2, 0) == {ErrorCode.UNKNOWN_MEMBER_ID}
    # C joins: A gives up one more partition and moves to epoch 3; what it keeps is still
    # its since epoch 1
    d.cg_heartbeat(G, "C", 0, topics=("t",))
    for member, epoch in (("A", 2), ("B", 2), ("A", 2), ("B", 2), ("C", 3)):
        held = _group(d).members[member].assigned
        d.cg_heartbeat(G, member, epoch, owned=held)
    a = _group(d).members["A"]
    assert a.member_epoch == 3 and len(a.assigned["t"]) < 2
    kept = min(a.assigned["t"])
    assert _commit(d, "A", 1, kept) == {ErrorCode.NONE}
    assert _commit(d, "A", 2, kept) == {ErrorCode.NONE}


def test_a_static_member_taking_its_place_back_commits_at_any_epoch() -> None:
    d = CoordinatorDriver(topics={"t": 2})
    d.cg_heartbeat(G, "A", 0, topics=("t",), instance_id="i")
    d.cg_heartbeat(G, "A", -2, instance_id="i")
    assert set(_group(d).members["A"].assignment_epochs.values()) == {0}
    d.cg_heartbeat(G, "A2", 0, topics=("t",), instance_id="i")
    assert _commit(d, "A2", 0, 0, 1) == {ErrorCode.NONE}
