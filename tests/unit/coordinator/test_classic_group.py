"""Classic JoinGroup/SyncGroup/Heartbeat/LeaveGroup, driven with a ManualClock."""

from __future__ import annotations

import pytest

from riverbed.coordinator import (
    ClassicGroupState,
    HeartbeatRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    Pending,
    SyncGroupResponse,
)
from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.coordinator.errors import IllegalStateTransitionError
from riverbed.coordinator.testing import CoordinatorDriver
from riverbed.protocol.error_codes import ErrorCode

G = "g"


def _group(d: CoordinatorDriver) -> ClassicGroup:
    g = d.coordinator.group(G)
    assert isinstance(g, ClassicGroup)
    return g


def _member_id(d: CoordinatorDriver, client: str) -> str:
    """First join of a v4+ client: MEMBER_ID_REQUIRED hands out the id."""
    r = d.join(G, client_id=client)
    assert isinstance(r, JoinGroupResponse) and r.error_code is ErrorCode.MEMBER_ID_REQUIRED
    return r.member_id


def _joined(d: CoordinatorDriver, pending: object) -> JoinGroupResponse:
    r = d.answer(pending)
    assert isinstance(r, JoinGroupResponse), r
    return r


def _stable_three(d: CoordinatorDriver) -> tuple[list[str], int]:
    """a, b, c join; after the initial delay a (first) leads; all sync.

    t=0     a joins        Empty → PreparingRebalance, deadline 3000
    t=1000  b joins        new member: deadline extended to 4000 at the 3000 check
    t=2000  c joins
    t=3000  delay check    new members arrived → extend by 3000
    t=6000  delay over     generation 1, CompletingRebalance
    """
    ids = [_member_id(d, c) for c in "abc"]
    pendings = []
    for i, mid in enumerate(ids):
        if i:
            d.advance(1000)
        pendings.append(d.join(G, mid))
    assert all(isinstance(p, Pending) for p in pendings)
    assert _group(d).state is ClassicGroupState.PREPARING_REBALANCE
    d.advance(1000)  # t=3000: initial delay extended (new members were added)
    assert all(d.answer(p) is None for p in pendings)
    d.advance(3000)  # t=6000
    responses = [_joined(d, p) for p in pendings]
    assert {r.generation_id for r in responses} == {1}
    assert {r.leader for r in responses} == {ids[0]}
    assert [m.member_id for m in responses[0].members] == ids
    assert responses[1].members == () and responses[2].members == ()
    assert responses[0].protocol_name == "range"
    assert _group(d).state is ClassicGroupState.COMPLETING_REBALANCE
    follower = d.sync(G, ids[1], 1)
    assert isinstance(follower, Pending)
    leader = d.sync(G, ids[0], 1, {mid: mid.encode() for mid in ids})
    assert leader == SyncGroupResponse(ErrorCode.NONE, "consumer", "range", ids[0].encode())
    assert d.answer(follower) == SyncGroupResponse(
        ErrorCode.NONE, "consumer", "range", ids[1].encode()
    )
    late = d.sync(G, ids[2], 1)
    assert isinstance(late, SyncGroupResponse) and late.assignment == ids[2].encode()
    assert _group(d).state is ClassicGroupState.STABLE
    return ids, 1


def test_three_members_join_with_initial_delay_and_sync() -> None:
    d = CoordinatorDriver()
    _stable_three(d)
    # the leader's sync persisted the group: one GroupMetadata record
    assert len(d.log) == 1 and d.log[0].value is not None


def test_leave_triggers_rebalance_and_rejoin_completes_it_early() -> None:
    d = CoordinatorDriver()
    (a, b, c), gen = _stable_three(d)
    r = d.handle(d.coordinator.leave_group(LeaveGroupRequest(G, (MemberIdentity(b),)), d.now))
    assert r.members[0].error_code is ErrorCode.NONE
    assert _group(d).state is ClassicGroupState.PREPARING_REBALANCE
    hb = d.handle(d.coordinator.heartbeat(HeartbeatRequest(G, gen, c), d.now))
    assert hb.error_code is ErrorCode.REBALANCE_IN_PROGRESS
    pa = d.join(G, a)
    assert isinstance(pa, Pending)
    rc = d.join(G, c)  # the last one back completes the join at once: answered directly
    assert isinstance(rc, JoinGroupResponse) and rc.generation_id == gen + 1
    assert _joined(d, pa).leader == a
    assert [m.member_id for m in _joined(d, pa).members] == [a, c]


def test_session_timeout_removes_member_and_rebalance_timeout_removes_laggard() -> None:
    d = CoordinatorDriver()
    (a, b, c), gen = _stable_three(d)
    # a and c heartbeat; b goes silent and is expired after its 10 s session
    for _ in range(3):
        d.advance(4000)
        for m in (a, c):
            hb = d.handle(d.coordinator.heartbeat(HeartbeatRequest(G, gen, m), d.now))
            if hb.error_code is not ErrorCode.NONE:
                break
    g = _group(d)
    assert b not in g.members
    assert g.state is ClassicGroupState.PREPARING_REBALANCE
    # only a rejoins; c keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins,
    # so it is dropped when the rebalance timeout (30 s from the rebalance start) fires
    pa = d.join(G, a)
    assert isinstance(pa, Pending)
    assert g.join_deadline_ms is not None
    while d.now + 4000 < g.join_deadline_ms:
        d.advance(4000)
        hb = d.handle(d.coordinator.heartbeat(HeartbeatRequest(G, gen, c), d.now))
        assert hb.error_code is ErrorCode.REBALANCE_IN_PROGRESS
        assert d.answer(pa) is None
    d.advance(g.join_deadline_ms - d.now)
    ra = _joined(d, pa)
    assert ra.generation_id == gen + 1 and [m.member_id for m in ra.members] == [a]
    assert set(_group(d).members) == {a}


def test_leader_leaves_and_a_rejoined_member_becomes_leader() -> None:
    d = CoordinatorDriver()
    (a, b, c), _ = _stable_three(d)
    d.handle(d.coordinator.leave_group(LeaveGroupRequest(G, (MemberIdentity(a),)), d.now))
    pb = d.join(G, b)
    rc = d.join(G, c)
    assert isinstance(rc, JoinGroupResponse)
    assert rc.leader == b and _joined(d, pb).members  # b leads now and gets the members


def test_static_member_rejoins_without_rebalance_and_old_id_is_fenced() -> None:
    d = CoordinatorDriver()
    p1 = d.join(G, instance_id="i1")
    p2 = d.join(G, instance_id="i2")  # static members skip MEMBER_ID_REQUIRED
    d.advance(3000)
    d.advance(3000)
    r1, r2 = _joined(d, p1), _joined(d, p2)
    d.sync(G, r2.member_id, 1, instance_id="i2")
    d.sync(G, r1.member_id, 1, {r1.member_id: b"A1", r2.member_id: b"A2"}, instance_id="i1")
    assert _group(d).state is ClassicGroupState.STABLE
    # i2 restarts: same instance id, no member id, same protocols → no rebalance
    again = d.join(G, instance_id="i2")
    assert isinstance(again, JoinGroupResponse) and again.error_code is ErrorCode.NONE
    assert again.member_id != r2.member_id and again.generation_id == 1
    assert _group(d).state is ClassicGroupState.STABLE
    s = d.sync(G, again.member_id, 1, instance_id="i2")
    assert isinstance(s, SyncGroupResponse) and s.assignment == b"A2"
    old = d.handle(d.coordinator.heartbeat(HeartbeatRequest(G, 1, r2.member_id, "i2"), d.now))
    assert old.error_code is ErrorCode.FENCED_INSTANCE_ID
    # the replacement is persisted: a second GroupMetadata record
    assert sum(1 for r in d.log if r.value is not None) == 2


def test_protocol_selection_by_vote_and_inconsistent_protocol() -> None:
    d = CoordinatorDriver()
    pa = d.join(G, instance_id="a", protocols=("cooperative-sticky", "range"))
    pb = d.join(G, instance_id="b", protocols=("range", "cooperative-sticky"))
    pc = d.join(G, instance_id="c", protocols=("range",))
    bad = d.join(G, instance_id="d", protocols=("roundrobin",))
    assert isinstance(bad, JoinGroupResponse)
    assert bad.error_code is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    d.advance(6000)
    assert {_joined(d, p).protocol_name for p in (pa, pb, pc)} == {"range"}


def test_errors_of_heartbeat_and_sync() -> None:
    d = CoordinatorDriver()
    (a, _b, _c), gen = _stable_three(d)
    hb = d.coordinator.heartbeat
    assert (
        hb(HeartbeatRequest(G, gen + 1, a), d.now).response.error_code
        is ErrorCode.ILLEGAL_GENERATION
    )
    assert (
        hb(HeartbeatRequest(G, gen, "nobody"), d.now).response.error_code
        is ErrorCode.UNKNOWN_MEMBER_ID
    )
    assert (
        hb(HeartbeatRequest("other", gen, a), d.now).response.error_code
        is ErrorCode.UNKNOWN_MEMBER_ID
    )
    s = d.sync(G, a, gen + 5)
    assert isinstance(s, SyncGroupResponse) and s.error_code is ErrorCode.ILLEGAL_GENERATION
    bad = d.join(G, session_timeout_ms=10)
    assert isinstance(bad, JoinGroupResponse)
    assert bad.error_code is ErrorCode.INVALID_SESSION_TIMEOUT


def test_old_clients_get_a_member_id_without_member_id_required() -> None:
    d = CoordinatorDriver()
    p = d.join(G, api_version=3)
    assert isinstance(p, Pending)
    d.advance(3000)
    r = _joined(d, p)
    assert r.error_code is ErrorCode.NONE and r.member_id and r.leader == r.member_id


def test_member_that_never_syncs_is_removed() -> None:
    d = CoordinatorDriver()
    pa = d.join(G, instance_id="a")
    pb = d.join(G, instance_id="b")
    d.advance(6000)
    ra, rb = _joined(d, pa), _joined(d, pb)
    d.sync(G, ra.member_id, 1, {ra.member_id: b"x"}, instance_id="a")
    d.advance(30_000)  # b never syncs within the rebalance timeout
    assert rb.member_id not in _group(d).members


def test_state_enum_is_the_spec() -> None:
    s = ClassicGroupState
    assert s.EMPTY.next_states == {s.PREPARING_REBALANCE, s.DEAD}
    assert s.STABLE.next_states == {s.PREPARING_REBALANCE, s.DEAD}
    with pytest.raises(IllegalStateTransitionError):
        s.EMPTY.check_transition(s.STABLE)
    assert s.from_wire("completingrebalance") is s.COMPLETING_REBALANCE
