"""A classic consumer group's in-memory state: members, generation, leader, protocol.

Data and small queries only; the JoinGroup/SyncGroup/Heartbeat/LeaveGroup logic that
moves it lives in :mod:`riverbed.coordinator.classic`.  Invariants:

* ``state`` changes only through :meth:`ClassicGroup.transition_to` (checked against
  :class:`ClassicGroupState`).
* ``leader_id`` is a member of ``members`` or None; None iff ``members`` is empty.
* ``static_members`` maps each instance id to the id of the one member holding it.
* Every member has an assignment (possibly empty bytes) once the group is Stable.
* ``generation_id`` only grows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from riverbed.coordinator.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscription_topics
from riverbed.coordinator.state import ClassicGroupState
from riverbed.errors import DecodeError


@dataclass(slots=True)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: int | None = None
    """Token of the JoinGroup waiting for the rebalance to complete."""
    awaiting_sync: int | None = None
    """Token of the SyncGroup waiting for the leader's assignment."""
    is_new: bool = False
    """Joined during the current rebalance and never got a generation."""
    heartbeat_deadline_ms: int = 0

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """This member's most preferred protocol among ``candidates``."""
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    state: ClassicGroupState = ClassicGroupState.EMPTY
    state_timestamp_ms: int | None = None
    """When the group last changed state; None for a simple group (offsets only, never
    joined), whose offsets then expire by commit time."""
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicGroupMember] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)
    """Member ids handed out with MEMBER_ID_REQUIRED -> deadline to come back (ms)."""
    static_members: dict[str, str] = field(default_factory=dict)
    pending_sync_members: set[str] = field(default_factory=set)
    join_deadline_ms: int | None = None
    """When the PreparingRebalance phase ends even if not everybody rejoined."""
    initial_delay_remaining_ms: int = 0
    """For the first rebalance of an Empty group: how much rebalance timeout is left to
    extend the initial delay by (Kafka's InitialDelayedJoin)."""
    in_initial_delay: bool = False
    """The join phase is the initial delay of an Empty group's first rebalance: it never
    completes early, only when the (extended) delay runs out."""
    new_member_added: bool = False
    sync_deadline_ms: int | None = None
    """When members that have not sent SyncGroup for this generation are removed."""

    group_type = "classic"

    def transition_to(self, target: ClassicGroupState, now_ms: int) -> None:
        self.state.check_transition(target)
        self.state = target
        self.state_timestamp_ms = now_ms

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    @property
    def is_empty(self) -> bool:
        return not self.members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.awaiting_join is not None for m in self.members.values()
        )

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        if self.is_empty:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(
            self.candidate_protocols() & set(protocols)
        )

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its first candidate; most votes wins.  Ties
        go to the protocol the leader prefers (deterministic, unlike Kafka's map order)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError("no protocol supported by every member")
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        leader = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        rank = {name: i for i, name in enumerate(leader.protocol_names())}
        return min(votes, key=lambda p: (-votes[p], rank.get(p, len(rank))))

    def subscribed_topics(self) -> frozenset[str] | None:
        """Topics the group consumes, when it speaks the consumer protocol; None if unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics |= subscription_topics(m.metadata(self.protocol_name))
        except (DecodeError, KeyError):
            return None
        return frozenset(topics)

    def add_member(self, member: ClassicGroupMember) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove_member(self, member_id: str) -> ClassicGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        self.pending_sync_members.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def maybe_elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did.  False when no
        member rejoined (Kafka then postpones the join completion)."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join is not None:
            return True
        for m in self.members.values():
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return True
        return False
