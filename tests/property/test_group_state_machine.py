"""Random join/sync/heartbeat/leave/tick sequences against the group coordinator.

Classic members behave like well-formed clients (they use the last member id and
generation they were given; the leader assigns every member it was told about);
KIP-848 members report back what they were assigned.  After every step the
invariants below must hold, and replaying the appended records must rebuild the same
persistent state whenever the classic group is Stable or Empty.
"""

from __future__ import annotations

import os

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from riverbed.coordinator import (
    ClassicGroupState,
    HeartbeatRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    Pending,
)
from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.coordinator.testing import CoordinatorDriver
from riverbed.protocol.error_codes import ErrorCode

CLIENTS = range(3)
S = ClassicGroupState
TOPICS = {"a": 3, "b": 5}


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.d = CoordinatorDriver(topics=TOPICS)
        self.member_ids: dict[int, str] = {}
        self.joins: dict[int, JoinGroupResponse] = {}
        self.pending_joins: dict[int, Pending] = {}
        self.generations_seen: dict[int, tuple[str, str | None]] = {}
        self.last_generation = 0
        Parts = dict[str, frozenset[int]]
        self.cg: dict[int, tuple[str, int, Parts, Parts]] = {}
        """client -> (member id, epoch, partitions it consumes, last assignment received)"""

    # -- classic ---------------------------------------------------------------------

    def _collect(self) -> None:
        for client, pending in list(self.pending_joins.items()):
            r = self.d.answer(pending)
            if isinstance(r, JoinGroupResponse):
                del self.pending_joins[client]
                self._joined(client, r)

    def _joined(self, client: int, r: JoinGroupResponse) -> None:
        if r.error_code is ErrorCode.NONE:
            self.joins[client] = r
            seen = self.generations_seen.setdefault(r.generation_id, (r.leader, r.protocol_name))
            assert seen == (r.leader, r.protocol_name), "two leaders in one generation"
        elif r.error_code is ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_ids.pop(client, None)

    @rule(
        client=st.sampled_from(CLIENTS),
        protocols=st.sampled_from(
            [("range",), ("roundrobin", "range"), ("range", "cooperative-sticky")]
        ),
    )
    def join(self, client: int, protocols: tuple[str, ...]) -> None:
        if client in self.pending_joins:
            return
        r = self.d.join(
            "g", self.member_ids.get(client, ""), client_id=f"c{client}", protocols=protocols
        )
        if isinstance(r, Pending):
            self.pending_joins[client] = r
        elif r.error_code is ErrorCode.MEMBER_ID_REQUIRED:  # come straight back, as clients do
            self.member_ids[client] = r.member_id
            self._collect()
            self.join(client, protocols)
            return
        else:
            self._joined(client, r)
        self._collect()

    @rule(client=st.sampled_from(CLIENTS))
    def sync(self, client: int) -> None:
        j = self.joins.get(client)
        if j is None or client in self.pending_joins:
            return
        assignments = {m.member_id: m.member_id.encode() for m in j.members}
        self.d.sync("g", j.member_id, j.generation_id, assignments)
        self._collect()

    @rule(client=st.sampled_from(CLIENTS))
    def heartbeat(self, client: int) -> None:
        j = self.joins.get(client)
        if j is not None:
            self.d.handle(
                self.d.coordinator.heartbeat(
                    HeartbeatRequest("g", j.generation_id, j.member_id), self.d.now
                )
            )

    @rule(client=st.sampled_from(CLIENTS))
    def leave(self, client: int) -> None:
        mid = self.member_ids.pop(client, None)
        self.joins.pop(client, None)
        if mid is not None:
            self.d.handle(
                self.d.coordinator.leave_group(
                    LeaveGroupRequest("g", (MemberIdentity(mid),)), self.d.now
                )
            )
            self._collect()
            self.pending_joins.pop(client, None)

    @rule(ms=st.sampled_from([0, 500, 3_000, 11_000, 31_000]))
    def tick(self, ms: int) -> None:
        self.d.advance(ms)
        self._collect()

    # -- KIP-848 -----------------------------------------------------------------------

    @rule(client=st.sampled_from(CLIENTS), topics=st.sampled_from([("a",), ("a", "b"), ("b",)]))
    def cg_heartbeat(self, client: int, topics: tuple[str, ...]) -> None:
        """Heartbeat reporting what the client consumes now (``owned``); a new assignment
        is only *received* here and applied later by :meth:`cg_apply`, like a slow client."""
        state = self.cg.get(client)
        if state is None:
            r = self.d.cg_heartbeat("cg", f"m{client}", 0, topics=topics)
        else:
            mid, epoch, owned, _ = state
            r = self.d.cg_heartbeat("cg", mid, epoch, owned=owned)
        if r.error_code is not ErrorCode.NONE:
            self.cg.pop(client, None)
            return
        assert r.member_id is not None
        owned = state[2] if state else {}
        received = dict(r.assignment) if r.assignment is not None else (state[3] if state else {})
        self.cg[client] = (r.member_id, r.member_epoch, owned, received)

    @rule(client=st.sampled_from(CLIENTS))
    def cg_apply(self, client: int) -> None:
        """The client finishes reconciling: it consumes exactly what it was assigned."""
        state = self.cg.get(client)
        if state is not None:
            self.cg[client] = (state[0], state[1], state[3], state[3])

    @rule(client=st.sampled_from(CLIENTS))
    def cg_leave(self, client: int) -> None:
        state = self.cg.pop(client, None)
        if state is not None:
            self.d.cg_heartbeat("cg", state[0], -1)

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def classic_invariants(self) -> None:
        g = self.d.coordinator.group("g")
        if not isinstance(g, ClassicGroup):
            return
        assert g.generation_id >= self.last_generation
        self.last_generation = g.generation_id
        assert (g.leader_id is None) == (not g.members)
        assert g.leader_id is None or g.leader_id in g.members
        if g.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            assert all(m.awaiting_join is None for m in g.members.values())
            assert g.protocol_name is not None
        if g.is_in(S.STABLE):
            for m in g.members.values():
                assert m.assignment == m.member_id.encode(), "Stable member without assignment"
                assert m.awaiting_sync is None
        if g.is_in(S.STABLE, S.EMPTY):
            assert self.d.replayed().snapshot()["groups"] == self.d.coordinator.snapshot()["groups"]

    @invariant()
    def consumer_invariants(self) -> None:
        g = self.d.coordinator.group("cg")
        if not isinstance(g, ConsumerGroup):
            return
        seen: set[tuple[str, int]] = set()
        for assignment in g.target.values():
            for t, ps in assignment.items():
                for p in ps:
                    assert (t, p) not in seen, "partition twice in the target"
                    seen.add((t, p))
        if g.members and g.assignment_epoch == g.group_epoch:
            wanted = {
                (t, p) for t in g.subscription_metadata for p in range(g.subscription_metadata[t])
            }
            assert seen == wanted
        client_owned: set[tuple[str, int]] = set()
        for mid, _epoch, owned, _received in self.cg.values():
            if mid not in g.members:
                continue  # fenced (session expired): its partitions are lost, as in Kafka
            for t, ps in owned.items():
                for p in ps:
                    assert (t, p) not in client_owned, "two clients own a partition at once"
                    client_owned.add((t, p))
        held: set[tuple[str, int]] = set()
        for m in g.members.values():
            assert m.member_epoch <= g.assignment_epoch
            for part in (m.assigned, m.pending_revocation):
                for t, ps in part.items():
                    for p in ps:
                        assert (t, p) not in held, "partition held by two members"
                        held.add((t, p))
        assert held == set(g.partition_owner)


_EXAMPLES = int(os.environ.get("RIVERBED_GROUP_EXAMPLES", "200"))
GroupMachine.TestCase.settings = settings(
    max_examples=_EXAMPLES, stateful_step_count=40, deadline=None
)
TestGroupStateMachine = GroupMachine.TestCase
