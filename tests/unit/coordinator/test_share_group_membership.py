"""Share group membership (KIP-932): the simple assignor, epochs, leave, timeouts, admin."""

from __future__ import annotations

from riverbed.coordinator.share_assignor import assign
from riverbed.coordinator.share_config import ShareGroupConfig
from riverbed.coordinator.share_group import (
    ShareGroupHeartbeatRequest,
    ShareGroupManager,
)
from riverbed.protocol.error_codes import ErrorCode

E = ErrorCode
COUNTS = {"t": 2, "u": 4}


def manager(foreign: dict[str, str] | None = None) -> ShareGroupManager:
    config = ShareGroupConfig(share_group_session_timeout_ms=1_000)
    return ShareGroupManager(config, COUNTS.get, lambda g: (foreign or {}).get(g))


def beat(
    m: ShareGroupManager,
    member: str,
    epoch: int,
    topics: tuple[str, ...] | None = ("t",),
    now: int = 0,
    group: str = "g",
):
    return m.heartbeat(ShareGroupHeartbeatRequest(group, member, epoch, None, topics), now)


def test_assignor_spreads_partitions_and_shares_them_past_the_member_count() -> None:
    # members <= partitions: each partition once;  members > partitions: shared
    assert assign({"a": frozenset({"u"}), "b": frozenset({"u"})}, COUNTS) == {
        "a": {"u": frozenset({0, 2})},
        "b": {"u": frozenset({1, 3})},
    }
    five = assign({m: frozenset({"t"}) for m in "abcde"}, COUNTS)
    assert [five[m]["t"] for m in "abcde"] == [frozenset({p}) for p in (0, 1, 0, 1, 0)]
    assert assign({"a": frozenset({"nope"})}, COUNTS) == {"a": {}}


def test_join_heartbeat_fencing_and_leave() -> None:
    m = manager()
    a = beat(m, "A", 0).response
    assert (
        a.error_code == E.NONE and a.member_epoch == 1 and a.assignment == {"t": frozenset({0, 1})}
    )
    b = beat(m, "B", 0).response
    assert b.member_epoch == 2 and b.assignment == {"t": frozenset({1})}
    # A's next heartbeat (no subscription change) gets its new, smaller assignment
    a2 = beat(m, "A", 1, None).response
    assert a2.member_epoch == 2 and a2.assignment == {"t": frozenset({0})}
    assert beat(m, "A", 2, None).response.assignment is None  # unchanged: not resent
    assert beat(m, "A", 7, None).response.error_code == E.FENCED_MEMBER_EPOCH
    assert beat(m, "Z", 3, None).response.error_code == E.UNKNOWN_MEMBER_ID
    left = beat(m, "B", -1, None)
    assert left.response.member_epoch == -1 and left.removed == ("B",)
    assert beat(m, "A", 2, None).response.assignment == {"t": frozenset({0, 1})}


def test_validation_and_group_type_conflicts() -> None:
    m = manager({"cg": "consumer"})
    assert beat(m, "", 0).response.error_code == E.INVALID_REQUEST
    assert beat(m, "A", 0, None).response.error_code == E.INVALID_REQUEST
    conflict = beat(m, "A", 0, group="cg").response
    assert conflict.error_code == E.GROUP_ID_NOT_FOUND and "not a share group" in (
        conflict.error_message or ""
    )
    assert m.describe("cg").error_code == E.GROUP_ID_NOT_FOUND


def test_session_timeout_removes_members_and_admin_sees_it() -> None:
    m = manager()
    beat(m, "A", 0, now=0)
    beat(m, "B", 0, now=500)
    assert m.next_deadline_ms() == 1_000
    assert m.list_groups() == [("g", "Stable")]
    assert m.delete_group("g") == E.NON_EMPTY_GROUP
    assert m.tick(1_000) == [("g", "A")]
    assert m.tick(1_500) == [("g", "B")]
    assert m.list_groups(types_filter=["Share"]) == [("g", "Empty")]
    assert m.list_groups(types_filter=["consumer"]) == []
    assert m.list_groups(states_filter=["stable"]) == []
    d = m.describe("g")
    assert d.error_code == E.NONE and d.group_state == "Empty" and d.assignor_name == "simple"
    assert m.delete_group("g") == E.NONE and m.delete_group("g") == E.GROUP_ID_NOT_FOUND


def test_a_groups_own_session_timeout_and_heartbeat_interval() -> None:
    """``share.session.timeout.ms`` / ``share.heartbeat.interval.ms`` set on the group (GROUP
    configs) beat the broker's settings; other groups keep the broker's."""
    m = manager()
    own = {"g": {"share.session.timeout.ms": "3000", "share.heartbeat.interval.ms": "700"}}
    m.group_overrides = lambda g: own.get(g, {})
    assert beat(m, "A", 0, now=0).response.heartbeat_interval_ms == 700
    other = beat(m, "B", 0, now=0, group="h")
    assert (
        other.response.heartbeat_interval_ms == ShareGroupConfig().share_group_heartbeat_interval_ms
    )
    assert m.tick(1_000) == [("h", "B")]
    assert m.tick(2_999) == []
    assert m.tick(3_000) == [("g", "A")]
