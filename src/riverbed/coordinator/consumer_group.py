"""A KIP-848 consumer group's state, and member reconciliation (Kafka's
``CurrentAssignmentBuilder``).

Epochs: the *group epoch* bumps on every membership or subscription change; the *target
assignment* is computed for one group epoch (``assignment_epoch``); each member's
``member_epoch`` reaches the assignment epoch once it owns exactly its target share.
Reconciliation moves a partition between members in two steps, revocation first::

    epoch 1: A owns {0,1,2,3}      target@2: A {0,1}  B {2,3}
    A heartbeats  → UNREVOKED_PARTITIONS: A keeps {0,1}, must revoke {2,3} (A stays at 1)
    B heartbeats  → UNRELEASED_PARTITIONS at epoch 2, owns {} (2,3 still held by A)
    A acks (owned={0,1}) → STABLE at epoch 2
    B heartbeats  → STABLE at epoch 2, owns {2,3}

Invariant (``partition_owner``): a partition is held — assigned or pending revocation —
by at most one member at a time.

Assignment epochs (KIP-1251, Kafka 4.3+): each member remembers the member epoch at which
each partition it holds was assigned to it (a partition it keeps across epochs keeps its
first epoch).  An offset commit carrying an *older* member epoch than the member's current
one is accepted when every partition it names is still held and was assigned at or before
that epoch (``assignment epoch <= commit epoch <= member epoch``), so a commit that raced a
heartbeat bumping the epoch is not refused; a commit for a partition the member no longer
holds, or received after it, is STALE_MEMBER_EPOCH (:meth:`ConsumerGroup.commit_error`).
Not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from riverbed.coordinator.state import ConsumerGroupState, MemberState
from riverbed.protocol.error_codes import ErrorCode

Partitions = dict[str, frozenset[int]]


def _minus(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> Partitions:
    out = {t: ps - b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


def _and(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> Partitions:
    out = {t: ps & b.get(t, frozenset()) for t, ps in a.items()}
    return {t: ps for t, ps in out.items() if ps}


def _or(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> Partitions:
    out = dict(a)
    for t, ps in b.items():
        out[t] = out.get(t, frozenset()) | ps
    return {t: ps for t, ps in out.items() if ps}


def _intersects(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> bool:
    return any(ps & b.get(t, frozenset()) for t, ps in a.items())


@dataclass(slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    session_deadline_ms: int = 0
    revocation_deadline_ms: int | None = None
    """Set while UNREVOKED_PARTITIONS: past it, the member is fenced (rebalance timeout)."""
    assignment_epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    """``(topic, partition) -> member epoch`` it was assigned at, for every partition held
    (assigned or pending revocation): kept exact by ``set_member_partitions``."""


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    partition_owner: dict[tuple[str, int], str] = field(default_factory=dict)
    subscription_metadata: dict[str, int] = field(default_factory=dict)
    """Topic -> partition count the current group epoch was computed with."""
    assignor_name: str = "uniform"

    group_type = "consumer"
    protocol_type = "consumer"

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    @property
    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topics(self) -> frozenset[str]:
        topics: set[str] = set()
        for m in self.members.values():
            topics |= set(m.subscribed_topic_names)
        return frozenset(topics) | frozenset(self.subscription_metadata)

    def set_member_partitions(
        self,
        member: ConsumerGroupMember,
        assigned: Partitions,
        pending_revocation: Partitions,
        new_epoch: int | None = None,
    ) -> None:
        """Change what ``member`` holds, keeping ``partition_owner`` exact.

        A partition it already held keeps its assignment epoch; one new to it gets
        ``new_epoch`` (the member's current epoch when ``None``)."""
        for t, ps in _or(member.assigned, member.pending_revocation).items():
            for p in ps:
                if self.partition_owner.get((t, p)) == member.member_id:
                    del self.partition_owner[(t, p)]
        member.assigned, member.pending_revocation = assigned, pending_revocation
        fill = member.member_epoch if new_epoch is None else new_epoch
        epochs: dict[tuple[str, int], int] = {}
        for t, ps in _or(assigned, pending_revocation).items():
            for p in ps:
                holder = self.partition_owner.setdefault((t, p), member.member_id)
                if holder != member.member_id:
                    raise AssertionError(f"{t}-{p} held by {holder} and {member.member_id}")
                epochs[(t, p)] = member.assignment_epochs.get((t, p), fill)
        member.assignment_epochs = epochs

    def commit_error(
        self, member_id: str, member_epoch: int, partitions: Iterable[tuple[str, int]]
    ) -> ErrorCode:
        """Whether a member may commit offsets of ``partitions`` with ``member_epoch``
        (OffsetCommit and TxnOffsetCommit, Kafka 4.4's ``ConsumerGroup.validateOffsetCommit``):
        UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH for an epoch newer than the member's or older
        than a partition's assignment epoch (or a partition it does not hold), else NONE.
        At the member's current epoch every partition is accepted, as Kafka does."""
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch == member.member_epoch:
            return ErrorCode.NONE
        if member_epoch > member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        for tp in partitions:
            assigned_at = member.assignment_epochs.get(tp)
            if assigned_at is None or member_epoch < assigned_at:
                return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self.set_member_partitions(member, {}, {})
        self.target.pop(member_id, None)
        if (
            member.instance_id is not None
            and self.static_members.get(member.instance_id) == member_id
        ):
            del self.static_members[member.instance_id]
        return member

    def reconcile(
        self, member: ConsumerGroupMember, owned: Mapping[str, frozenset[int]] | None, now_ms: int
    ) -> None:
        """Move ``member`` toward its target at ``assignment_epoch`` (one step)."""
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if owned is None or _intersects(member.pending_revocation, owned):
                return  # still holds partitions it must give up
            self.set_member_partitions(member, member.assigned, {})
            self._next(member, owned, now_ms)
        elif (
            member.state is MemberState.UNRELEASED_PARTITIONS
            or member.member_epoch != self.assignment_epoch
        ):
            self._next(member, owned, now_ms)

    def _next(
        self, member: ConsumerGroupMember, owned: Mapping[str, frozenset[int]] | None, now_ms: int
    ) -> None:
        target = self.target.get(member.member_id, {})
        kept = _and(member.assigned, target)
        revoke = _minus(member.assigned, target)
        if revoke and (owned is None or _intersects(revoke, owned)):
            self._move(member, MemberState.UNREVOKED_PARTITIONS, member.member_epoch)
            self.set_member_partitions(member, kept, revoke)
            member.revocation_deadline_ms = now_ms + max(member.rebalance_timeout_ms, 0)
            return
        wanted = _minus(target, kept)
        free = {
            t: frozenset(p for p in ps if (t, p) not in self.partition_owner)
            for t, ps in wanted.items()
        }
        new_assigned = _or(kept, free)
        unreleased = _minus(wanted, free)
        self.set_member_partitions(member, new_assigned, {}, self.assignment_epoch)
        member.revocation_deadline_ms = None
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        self._move(member, state, self.assignment_epoch)

    @staticmethod
    def _move(member: ConsumerGroupMember, state: MemberState, epoch: int) -> None:
        member.state.check_transition(state)
        member.state = state
        if epoch != member.member_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = epoch
