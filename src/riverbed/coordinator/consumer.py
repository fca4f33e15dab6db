"""KIP-848 ``ConsumerGroupHeartbeat`` handling: membership, epochs, target assignment,
reconciliation, fencing; and ``ConsumerGroupDescribe``.

One heartbeat does, in order (Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``):
validate; find or create the group (only a join, epoch 0, creates); handle a leave
(epoch -1 removes the member, -2 parks a static member with its partitions); find or
create the member and check its epoch (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID,
UNRELEASED_INSTANCE_ID); apply subscription changes and the topics' partition counts —
any change bumps the *group epoch*; compute a new *target assignment* with the server
assignor when the group epoch is ahead of it; reconcile the member one step (revocation
before assignment, see :mod:`riverbed.coordinator.consumer_group`); answer with the
member epoch, the heartbeat interval and the assignment when it changed.

Timers (:meth:`ConsumerGroupManager.tick`): a member whose session lapses, or that does
not revoke partitions within its rebalance timeout, is fenced (removed, group epoch
bumped).  Group state is persisted by the coordinator facade after each call, as a diff
(:mod:`riverbed.coordinator.consumer_persistence`), so members keep their epochs and
assignments across a coordinator restart.  Not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Protocol

from riverbed.coordinator import topic_regex
from riverbed.coordinator.api import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    ConsumerGroupDescription,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupMemberDescription,
)
from riverbed.coordinator.assignors import ASSIGNORS
from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember
from riverbed.coordinator.context import CoordinatorContext, Reply
from riverbed.coordinator.errors import GroupCoordinatorError
from riverbed.coordinator.state import MemberState
from riverbed.protocol.error_codes import ErrorCode

E = ErrorCode


class TopicMetadata(Protocol):
    """What the broker tells the coordinator about topics."""

    def partition_count(self, topic: str) -> int | None:
        """Partitions of ``topic``, or None if it does not exist."""
        ...

    def topic_names(self) -> Iterable[str]:
        """Every topic (for regex subscriptions)."""
        ...

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id (persisted assignments name topics by id, as Kafka's)."""
        ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id, or None if there is none now."""
        ...


class ConsumerGroupManager:
    def __init__(self, ctx: CoordinatorContext, topics: TopicMetadata) -> None:
        self.ctx = ctx
        self.topics = topics

    def heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, now_ms: int
    ) -> Reply[ConsumerGroupHeartbeatResponse]:
        try:
            return Reply(self._heartbeat(req, now_ms))
        except GroupCoordinatorError as exc:
            return Reply(ConsumerGroupHeartbeatResponse(exc.error_code, str(exc)))

    # -- the heartbeat ---------------------------------------------------------------

    def _validate(self, req: ConsumerGroupHeartbeatRequest) -> None:
        if not req.group_id:
            raise GroupCoordinatorError(E.INVALID_REQUEST, "GroupId can't be empty")
        if (
            req.member_epoch == 0
            and req.subscribed_topic_names is None
            and req.subscribed_topic_regex is None
        ):
            raise GroupCoordinatorError(E.INVALID_REQUEST, "a join needs a subscription")
        if req.member_epoch != 0 and req.member_id == UNKNOWN_MEMBER_ID:
            raise GroupCoordinatorError(E.INVALID_REQUEST, "MemberId can't be empty")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is None:
            raise GroupCoordinatorError(E.INVALID_REQUEST, "epoch -2 needs an InstanceId")
        if (
            req.server_assignor is not None
            and req.server_assignor not in self.ctx.config.consumer_group_assignors
        ):
            raise GroupCoordinatorError(E.UNSUPPORTED_ASSIGNOR, req.server_assignor)
        if req.subscribed_topic_regex:  # RE2, as Kafka's RE2/J: INVALID_REGULAR_EXPRESSION
            topic_regex.validate(req.subscribed_topic_regex)

    def _group(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroup:
        group = self.ctx.groups.get(req.group_id)
        if isinstance(group, ClassicGroup):
            if group.members or req.member_epoch != 0:
                raise GroupCoordinatorError(
                    E.GROUP_ID_NOT_FOUND, f"{req.group_id} is not a consumer group"
                )
            group = None  # an empty classic group is converted
        if group is None:
            if req.member_epoch != 0:
                raise GroupCoordinatorError(E.UNKNOWN_MEMBER_ID, "group not found")
            group = ConsumerGroup(
                req.group_id, assignor_name=self.ctx.config.consumer_group_assignors[0]
            )
            self.ctx.groups[req.group_id] = group
        return group

    def _heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, now: int
    ) -> ConsumerGroupHeartbeatResponse:
        self._validate(req)
        group = self._group(req)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group, req)
        member, changed = self._member(group, req, now)
        before = dict(member.assigned)
        changed |= self._update_subscription(group, member, req)
        member.session_deadline_ms = now + self.ctx.session_timeout_ms(group.group_id)
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            changed = True
        if changed:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        group.reconcile(member, req.owned_partitions, now)
        send_assignment = (
            req.member_epoch == 0
            or member.assigned != before
            or (
                req.owned_partitions is not None
                and {t: ps for t, ps in req.owned_partitions.items() if ps} != member.assigned
            )
        )
        return ConsumerGroupHeartbeatResponse(
            E.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.ctx.heartbeat_interval_ms(group.group_id),
            assignment=dict(member.assigned) if send_assignment else None,
        )

    def _leave(
        self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        member = group.members.get(req.member_id)
        if member is None:
            raise GroupCoordinatorError(E.UNKNOWN_MEMBER_ID)
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH  # keeps its partitions
            # whoever takes its place may commit them at any epoch (Kafka resets them to 0)
            member.assignment_epochs = dict.fromkeys(member.assignment_epochs, 0)
        else:
            self.fence(group, member.member_id)
        return ConsumerGroupHeartbeatResponse(
            E.NONE, member_id=req.member_id, member_epoch=req.member_epoch
        )

    def fence(self, group: ConsumerGroup, member_id: str) -> None:
        """Remove a member (leave, session or rebalance timeout): its partitions are freed
        and the group epoch moves so a new target is computed."""
        if group.remove_member(member_id) is not None:
            group.group_epoch += 1

    def _member(
        self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, now: int
    ) -> tuple[ConsumerGroupMember, bool]:
        """The member the request speaks for, and whether membership changed."""
        if req.member_epoch != 0:
            member = group.members.get(req.member_id)
            if member is None:
                raise GroupCoordinatorError(E.UNKNOWN_MEMBER_ID)
            self._check_epoch(member, req)
            return member, False
        member_id = req.member_id or self.ctx.new_member_id(req.client_id or "consumer")
        changed = True
        old = None
        if req.instance_id is not None:
            old_id = group.static_members.get(req.instance_id)
            if old_id is not None:
                old = group.members[old_id]
                if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and old_id != member_id:
                    raise GroupCoordinatorError(E.UNRELEASED_INSTANCE_ID)
        if old is None and member_id in group.members:
            self.fence(group, member_id)  # a dynamic member rejoining from scratch
        member = ConsumerGroupMember(
            member_id,
            req.instance_id,
            req.rack_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
        )
        if old is not None:  # a static member takes over its predecessor's place
            assigned, pending = old.assigned, old.pending_revocation
            target = group.target.pop(old.member_id, {})
            group.remove_member(old.member_id)
            group.members[member_id] = member
            group.set_member_partitions(member, assigned, pending, new_epoch=0)
            group.target[member_id] = target
            member.subscribed_topic_names = old.subscribed_topic_names
            member.subscribed_topic_regex = old.subscribed_topic_regex
            member.state = old.state if pending else MemberState.STABLE
            changed = False
        group.members[member_id] = member
        if req.instance_id is not None:
            group.static_members[req.instance_id] = member_id
        return member, changed

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest) -> None:
        if req.member_epoch > member.member_epoch:
            raise GroupCoordinatorError(E.FENCED_MEMBER_EPOCH)
        if req.member_epoch < member.member_epoch:
            owned = req.owned_partitions
            subset = owned is not None and all(
                ps <= member.assigned.get(t, frozenset()) for t, ps in owned.items()
            )
            if req.member_epoch != member.previous_member_epoch or not subset:
                raise GroupCoordinatorError(E.FENCED_MEMBER_EPOCH)

    def _update_subscription(
        self, group: ConsumerGroup, member: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest
    ) -> bool:
        changed = False
        if req.subscribed_topic_names is not None:
            names = tuple(sorted(set(req.subscribed_topic_names)))
            changed |= names != member.subscribed_topic_names
            member.subscribed_topic_names = names
        if req.subscribed_topic_regex is not None:
            regex = req.subscribed_topic_regex or None
            changed |= regex != member.subscribed_topic_regex
            member.subscribed_topic_regex = regex
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
            group.assignor_name = req.server_assignor
        if req.rebalance_timeout_ms >= 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        return changed

    def member_topics(self, member: ConsumerGroupMember) -> frozenset[str]:
        topics = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            topics |= topic_regex.matching(member.subscribed_topic_regex, self.topics.topic_names())
        return frozenset(topics)

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, int]:
        topics: set[str] = set()
        for m in group.members.values():
            topics |= self.member_topics(m)
        counts = {t: self.topics.partition_count(t) for t in sorted(topics)}
        return {t: n for t, n in counts.items() if n is not None}

    def _compute_target(self, group: ConsumerGroup) -> None:
        assignor = ASSIGNORS[group.assignor_name]
        subscriptions = {mid: self.member_topics(m) for mid, m in group.members.items()}
        group.target = assignor.assign(subscriptions, group.subscription_metadata, group.target)
        group.assignment_epoch = group.group_epoch

    # -- timers and describe -----------------------------------------------------------

    def next_deadline_ms(self, group: ConsumerGroup) -> int | None:
        deadlines = [m.session_deadline_ms for m in group.members.values()]
        deadlines += [
            m.revocation_deadline_ms
            for m in group.members.values()
            if m.revocation_deadline_ms is not None
        ]
        return min(deadlines, default=None)

    def tick(self, group: ConsumerGroup, now: int) -> None:
        for m in list(group.members.values()):
            expired = m.session_deadline_ms <= now or (
                m.revocation_deadline_ms is not None and m.revocation_deadline_ms <= now
            )
            if expired:
                self.fence(group, m.member_id)

    def describe(self, group_id: str) -> ConsumerGroupDescription:
        group = self.ctx.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return ConsumerGroupDescription(group_id, E.GROUP_ID_NOT_FOUND)
        return ConsumerGroupDescription(
            group_id,
            E.NONE,
            group.state.value,
            group.group_epoch,
            group.assignment_epoch,
            group.assignor_name,
            tuple(
                ConsumerGroupMemberDescription(
                    m.member_id,
                    m.instance_id,
                    m.rack_id,
                    m.member_epoch,
                    m.client_id,
                    m.client_host,
                    m.subscribed_topic_names,
                    m.subscribed_topic_regex,
                    dict(m.assigned),
                    dict(group.target.get(m.member_id, {})),
                )
                for m in group.members.values()
            ),
        )
