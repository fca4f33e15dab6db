"""Classic group protocol handlers: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, timers.

Kafka's ``GroupMetadataManager`` (classic part) as synchronous functions over
:class:`~riverbed.coordinator.classic_group.ClassicGroup`.  A rebalance, as a timeline::

    t=0     A joins (Empty → PreparingRebalance; initial delay 3 s, extended per new member)
    t=1s    B joins                      (join deadline moves to 1 s + 3 s, capped)
    t=4s    delay over: generation 1, leader A gets the members, B an empty list
            (→ CompletingRebalance; everyone must SyncGroup within the rebalance timeout)
    t=4.1s  B syncs (waits), A syncs with assignments → Stable; both get their assignment

Later rebalances (a join, leave, session expiry, metadata change) end as soon as every
member has rejoined, or at the rebalance timeout, when dynamic members that did not
rejoin are removed.  Static members (``group.instance.id``) that rejoin with unchanged
protocol selection take over their old member id without a rebalance; the old id is
fenced (FENCED_INSTANCE_ID).  Member metadata and assignments are opaque bytes passed
through untouched.  Records written: ``GroupMetadataValue`` when the leader's assignment
is installed, when a generation ends Empty, and when a static member is replaced.
Not thread-safe; see :mod:`riverbed.coordinator.context` for how answers flow.
"""

from __future__ import annotations

from riverbed.coordinator.api import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    Pending,
    SyncGroupRequest,
    SyncGroupResponse,
)
from riverbed.coordinator.classic_group import ClassicGroup, ClassicGroupMember
from riverbed.coordinator.context import CoordinatorContext, Reply
from riverbed.coordinator.errors import GroupCoordinatorError
from riverbed.coordinator.offsets_topic_records import (
    CoordinatorRecord,
    GroupMetadataValue,
    MemberMetadata,
    group_metadata_record,
)
from riverbed.coordinator.state import ClassicGroupState
from riverbed.protocol.error_codes import ErrorCode

S = ClassicGroupState
E = ErrorCode


def _fail(code: ErrorCode, message: str = "") -> GroupCoordinatorError:
    return GroupCoordinatorError(code, message)


def group_metadata_value(group: ClassicGroup) -> GroupMetadataValue:
    """The ``GroupMetadataValue`` persisting ``group`` as it is now."""
    protocol = group.protocol_name
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp_ms=-1
        if group.state_timestamp_ms is None
        else group.state_timestamp_ms,
        members=tuple(
            MemberMetadata(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(protocol) if protocol is not None else b"",
                m.assignment,
            )
            for m in group.members.values()
        ),
    )


def group_from_metadata(group_id: str, value: GroupMetadataValue) -> ClassicGroup:
    """A group rebuilt from its last ``GroupMetadataValue``: Stable if it has members,
    else Empty.  Heartbeat deadlines are set by :func:`on_loaded`."""
    group = ClassicGroup(
        group_id,
        state=S.STABLE if value.members else S.EMPTY,
        state_timestamp_ms=None
        if value.current_state_timestamp_ms < 0
        else value.current_state_timestamp_ms,
        generation_id=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
    )
    for mm in value.members:
        group.add_member(
            ClassicGroupMember(
                mm.member_id,
                mm.group_instance_id,
                mm.client_id,
                mm.client_host,
                mm.rebalance_timeout_ms,
                mm.session_timeout_ms,
                value.protocol_type,
                ((value.protocol or "", mm.subscription),),
                assignment=mm.assignment,
            )
        )
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    return group


def on_loaded(group: ClassicGroup, now_ms: int) -> None:
    """After replay: every member gets a full session from now (Kafka's onLoaded)."""
    for m in group.members.values():
        m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms


def validate_member(group: ClassicGroup, member_id: str, instance_id: str | None) -> None:
    """UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, as Kafka's ``ClassicGroup.validateMember``."""
    if instance_id is not None:
        existing = group.static_members.get(instance_id)
        if existing is None:
            raise _fail(E.UNKNOWN_MEMBER_ID)
        if existing != member_id:
            raise _fail(E.FENCED_INSTANCE_ID)
    elif member_id not in group.members:
        raise _fail(E.UNKNOWN_MEMBER_ID)


class ClassicGroupManager:
    """Handlers of the classic protocol over the shared :class:`CoordinatorContext`."""

    def __init__(self, ctx: CoordinatorContext) -> None:
        self.ctx = ctx

    # -- lookup --------------------------------------------------------------------

    def _group(self, group_id: str) -> ClassicGroup:
        group = self.ctx.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            raise _fail(E.UNKNOWN_MEMBER_ID, f"group {group_id} is not a classic group")
        if group.is_in(S.DEAD):
            raise _fail(E.COORDINATOR_NOT_AVAILABLE)
        return group

    def _answer(self, pending: Pending) -> JoinGroupResponse | SyncGroupResponse | Pending:
        done = self.ctx.take_completion(pending.token)
        return pending if done is None else done.response

    # -- JoinGroup -----------------------------------------------------------------

    def join_group(self, req: JoinGroupRequest, now_ms: int) -> Reply[JoinGroupResponse | Pending]:
        records: list[CoordinatorRecord] = []
        try:
            answer = self._join(req, now_ms, records)
        except GroupCoordinatorError as exc:
            answer = JoinGroupResponse(exc.error_code, member_id=req.member_id)
        assert not isinstance(answer, SyncGroupResponse)
        return Reply(answer, tuple(records))

    def _join(
        self, req: JoinGroupRequest, now: int, records: list[CoordinatorRecord]
    ) -> JoinGroupResponse | SyncGroupResponse | Pending:
        cfg = self.ctx.config
        if not req.group_id:
            raise _fail(E.INVALID_GROUP_ID)
        if (
            not cfg.group_min_session_timeout_ms
            <= req.session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            raise _fail(E.INVALID_SESSION_TIMEOUT)
        existing = self.ctx.groups.get(req.group_id)
        if existing is not None and not isinstance(existing, ClassicGroup):
            if existing.members:
                raise _fail(E.INCONSISTENT_GROUP_PROTOCOL, "a consumer group uses this id")
            existing = None  # an empty KIP-848 group is converted, as Kafka does
        if existing is None and req.member_id != UNKNOWN_MEMBER_ID:
            raise _fail(E.UNKNOWN_MEMBER_ID)
        group = existing if existing is not None else ClassicGroup(req.group_id)
        if group.is_in(S.DEAD):
            raise _fail(E.COORDINATOR_NOT_AVAILABLE)
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            raise _fail(E.INCONSISTENT_GROUP_PROTOCOL)
        self.ctx.groups[req.group_id] = group
        if req.member_id == UNKNOWN_MEMBER_ID:
            return self._join_new_member(group, req, now, records)
        return self._join_existing_member(group, req, now, records)

    def _join_new_member(
        self, group: ClassicGroup, req: JoinGroupRequest, now: int, records: list[CoordinatorRecord]
    ) -> JoinGroupResponse | SyncGroupResponse | Pending:
        if req.group_instance_id is not None:
            new_id = self.ctx.new_member_id(req.group_instance_id)
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None:
                return self._replace_static_member(group, old_id, new_id, req, now, records)
            return self._add_member_and_rebalance(group, new_id, req, now, records)
        if len(group.members) + len(group.pending_members) >= self.ctx.config.group_max_size:
            raise _fail(E.GROUP_MAX_SIZE_REACHED)
        new_id = self.ctx.new_member_id(req.client_id)
        if req.api_version >= 4:
            group.pending_members[new_id] = now + req.session_timeout_ms
            return JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id=new_id)
        return self._add_member_and_rebalance(group, new_id, req, now, records)

    def _join_existing_member(
        self, group: ClassicGroup, req: JoinGroupRequest, now: int, records: list[CoordinatorRecord]
    ) -> JoinGroupResponse | SyncGroupResponse | Pending:
        if req.member_id in group.pending_members:
            if req.group_instance_id is not None:
                raise _fail(E.UNKNOWN_MEMBER_ID)
            return self._add_member_and_rebalance(group, req.member_id, req, now, records)
        validate_member(group, req.member_id, req.group_instance_id)
        member = group.members[req.member_id]
        same_metadata = member.protocols == req.protocols
        if group.is_in(S.PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, member, req, now, records)
        if group.is_in(S.COMPLETING_REBALANCE):
            if same_metadata:
                return self._current_generation_response(group, member.member_id)
            return self._update_member_and_rebalance(group, member, req, now, records)
        if group.is_in(S.STABLE):
            if group.leader_id == member.member_id or not same_metadata:
                return self._update_member_and_rebalance(group, member, req, now, records)
            return self._current_generation_response(group, member.member_id)
        raise _fail(E.UNKNOWN_MEMBER_ID)

    def _current_generation_response(
        self, group: ClassicGroup, member_id: str
    ) -> JoinGroupResponse:
        is_leader = group.leader_id == member_id
        return JoinGroupResponse(
            E.NONE,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            members=self._leader_members(group) if is_leader else (),
        )

    def _leader_members(self, group: ClassicGroup) -> tuple[JoinGroupMember, ...]:
        protocol = group.protocol_name or ""
        return tuple(
            JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(protocol))
            for m in group.members.values()
        )

    def _new_member(self, member_id: str, req: JoinGroupRequest, now: int) -> ClassicGroupMember:
        rebalance_timeout = (
            req.rebalance_timeout_ms if req.rebalance_timeout_ms >= 0 else req.session_timeout_ms
        )
        return ClassicGroupMember(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            rebalance_timeout,
            req.session_timeout_ms,
            req.protocol_type,
            req.protocols,
            is_new=True,
            heartbeat_deadline_ms=now + self.ctx.config.group_new_member_join_timeout_ms,
        )

    def _add_member_and_rebalance(
        self,
        group: ClassicGroup,
        member_id: str,
        req: JoinGroupRequest,
        now: int,
        records: list[CoordinatorRecord],
    ) -> JoinGroupResponse | SyncGroupResponse | Pending:
        member = self._new_member(member_id, req, now)
        pending = self.ctx.pending()
        member.awaiting_join = pending.token
        group.pending_members.pop(member_id, None)
        group.add_member(member)
        if group.in_initial_delay:
            group.new_member_added = True
        self._maybe_prepare_rebalance_or_complete_join(group, now, records)
        return self._answer(pending)

    def _update_member_and_rebalance(
        self,
        group: ClassicGroup,
        member: ClassicGroupMember,
        req: JoinGroupRequest,
        now: int,
        records: list[CoordinatorRecord],
    ) -> JoinGroupResponse | SyncGroupResponse | Pending:
        member.protocols = req.protocols
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = (
            req.rebalance_timeout_ms if req.rebalance_timeout_ms >= 0 else req.session_timeout_ms
        )
        member.client_id, member.client_host = req.client_id, req.client_host
        if member.awaiting_join is not None:  # superseded by this join
            self.ctx.complete(
                member.awaiting_join,
                group.group_id,
                member.member_id,
                JoinGroupResponse(E.REBALANCE_IN_PROGRESS, member_id=member.member_id),
            )
        pending = self.ctx.pending()
        member.awaiting_join = pending.token
        self._maybe_prepare_rebalance_or_complete_join(group, now, records)
        return self._answer(pending)

    def _replace_static_member(
        self,
        group: ClassicGroup,
        old_id: str,
        new_id: str,
        req: JoinGroupRequest,
        now: int,
        records: list[CoordinatorRecord],
    ) -> JoinGroupResponse | SyncGroupResponse | Pending:
        old = group.members[old_id]
        if old.awaiting_join is not None:
            self.ctx.complete(
                old.awaiting_join,
                group.group_id,
                old_id,
                JoinGroupResponse(E.FENCED_INSTANCE_ID, member_id=old_id),
            )
        if old.awaiting_sync is not None:
            self.ctx.complete(
                old.awaiting_sync, group.group_id, old_id, SyncGroupResponse(E.FENCED_INSTANCE_ID)
            )
        old.awaiting_join = old.awaiting_sync = None
        old.member_id = new_id
        group.members = {(new_id if k == old_id else k): v for k, v in group.members.items()}
        group.static_members[req.group_instance_id or ""] = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        if old_id in group.pending_sync_members:
            group.pending_sync_members.discard(old_id)
            group.pending_sync_members.add(new_id)
        old.protocols = req.protocols
        old.client_id, old.client_host = req.client_id, req.client_host
        old.session_timeout_ms = req.session_timeout_ms
        old.heartbeat_deadline_ms = now + req.session_timeout_ms
        if (
            group.is_in(S.STABLE)
            and group.protocol_name is not None
            and group.select_protocol() == group.protocol_name
        ):
            records.append(group_metadata_record(group.group_id, group_metadata_value(group)))
            is_leader = group.leader_id == new_id
            return JoinGroupResponse(
                E.NONE,
                member_id=new_id,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id or "",
                skip_assignment=is_leader,
                members=self._leader_members(group) if is_leader else (),
            )
        pending = self.ctx.pending()
        old.awaiting_join = pending.token
        if group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now, records)
        else:
            self._prepare_rebalance(group, now, records)
        return self._answer(pending)

    # -- rebalance machinery -------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(
        self, group: ClassicGroup, now: int, records: list[CoordinatorRecord]
    ) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self._prepare_rebalance(group, now, records)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now, records)

    def _prepare_rebalance(
        self, group: ClassicGroup, now: int, records: list[CoordinatorRecord]
    ) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            for m in group.members.values():
                m.assignment = b""
                if m.awaiting_sync is not None:
                    self.ctx.complete(
                        m.awaiting_sync,
                        group.group_id,
                        m.member_id,
                        SyncGroupResponse(E.REBALANCE_IN_PROGRESS),
                    )
                    m.awaiting_sync = None
        group.pending_sync_members.clear()
        group.sync_deadline_ms = None
        initial = group.is_in(S.EMPTY)
        timeout = group.rebalance_timeout_ms()
        if initial:
            delay = min(self.ctx.config.group_initial_rebalance_delay_ms, timeout)
            group.join_deadline_ms = now + delay
            group.initial_delay_remaining_ms = max(timeout - delay, 0)
            group.in_initial_delay = True
            group.new_member_added = False
        else:
            group.join_deadline_ms = now + timeout
            group.in_initial_delay = False
        group.transition_to(S.PREPARING_REBALANCE, now)
        if not initial:
            self._maybe_complete_join(group, now, records)

    def _maybe_complete_join(
        self, group: ClassicGroup, now: int, records: list[CoordinatorRecord]
    ) -> None:
        if (
            group.is_in(S.PREPARING_REBALANCE)
            and not group.in_initial_delay
            and group.all_members_joined()
        ):
            self._complete_join(group, now, records)

    def _on_join_deadline(
        self, group: ClassicGroup, now: int, records: list[CoordinatorRecord]
    ) -> None:
        if (
            group.in_initial_delay
            and group.new_member_added
            and group.initial_delay_remaining_ms > 0
        ):
            initial = self.ctx.config.group_initial_rebalance_delay_ms
            group.new_member_added = False
            group.join_deadline_ms = now + min(initial, group.initial_delay_remaining_ms)
            group.initial_delay_remaining_ms = max(group.initial_delay_remaining_ms - initial, 0)
            return
        self._complete_join(group, now, records)

    def _complete_join(
        self, group: ClassicGroup, now: int, records: list[CoordinatorRecord]
    ) -> None:
        for m in list(group.members.values()):  # dynamic members that did not rejoin
            if m.awaiting_join is None and m.group_instance_id is None:
                group.remove_member(m.member_id)
        if group.members and not group.maybe_elect_joined_leader():
            group.join_deadline_ms = now + group.rebalance_timeout_ms()  # nobody rejoined yet
            return
        group.in_initial_delay = False
        group.join_deadline_ms = None
        group.generation_id += 1
        if not group.members:
            group.protocol_name = None
            group.transition_to(S.EMPTY, now)
            records.append(group_metadata_record(group.group_id, group_metadata_value(group)))
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(S.COMPLETING_REBALANCE, now)
        for m in group.members.values():
            m.is_new = False
            m.heartbeat_deadline_ms = now + m.session_timeout_ms
            if m.awaiting_join is not None:
                self.ctx.complete(
                    m.awaiting_join,
                    group.group_id,
                    m.member_id,
                    self._current_generation_response(group, m.member_id),
                )
                m.awaiting_join = None
        group.pending_sync_members = set(group.members)
        group.sync_deadline_ms = now + group.rebalance_timeout_ms()

    def remove_member_and_update(
        self, group: ClassicGroup, member_id: str, now: int, records: list[CoordinatorRecord]
    ) -> None:
        """Remove a member (leave, session expiry, missed sync) and rebalance."""
        member = group.remove_member(member_id)
        if member is None:
            return
        if member.awaiting_join is not None:
            self.ctx.complete(
                member.awaiting_join,
                group.group_id,
                member_id,
                JoinGroupResponse(E.UNKNOWN_MEMBER_ID, member_id=member_id),
            )
        if member.awaiting_sync is not None:
            self.ctx.complete(
                member.awaiting_sync,
                group.group_id,
                member_id,
                SyncGroupResponse(E.UNKNOWN_MEMBER_ID),
            )
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now, records)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join(group, now, records)

    # -- SyncGroup -----------------------------------------------------------------

    def sync_group(self, req: SyncGroupRequest, now_ms: int) -> Reply[SyncGroupResponse | Pending]:
        records: list[CoordinatorRecord] = []
        try:
            answer = self._sync(req, now_ms, records)
        except GroupCoordinatorError as exc:
            answer = SyncGroupResponse(exc.error_code)
        assert not isinstance(answer, JoinGroupResponse)
        return Reply(answer, tuple(records))

    def _sync(
        self, req: SyncGroupRequest, now: int, records: list[CoordinatorRecord]
    ) -> JoinGroupResponse | SyncGroupResponse | Pending:
        group = self._group(req.group_id)
        validate_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != group.generation_id:
            raise _fail(E.ILLEGAL_GENERATION)
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            raise _fail(E.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[req.member_id]
        member.heartbeat_deadline_ms = now + member.session_timeout_ms
        if group.is_in(S.PREPARING_REBALANCE):
            raise _fail(E.REBALANCE_IN_PROGRESS)
        if group.is_in(S.STABLE):
            self._synced(group, member.member_id)
            return SyncGroupResponse(
                E.NONE, group.protocol_type, group.protocol_name, member.assignment
            )
        if not group.is_in(S.COMPLETING_REBALANCE):
            raise _fail(E.UNKNOWN_MEMBER_ID)
        pending = self.ctx.pending()
        member.awaiting_sync = pending.token
        self._synced(group, member.member_id)
        if group.leader_id == member.member_id:
            assignments = dict(req.assignments)
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            group.transition_to(S.STABLE, now)
            records.append(group_metadata_record(group.group_id, group_metadata_value(group)))
            for m in group.members.values():
                if m.awaiting_sync is not None:
                    self.ctx.complete(
                        m.awaiting_sync,
                        group.group_id,
                        m.member_id,
                        SyncGroupResponse(
                            E.NONE, group.protocol_type, group.protocol_name, m.assignment
                        ),
                    )
                    m.awaiting_sync = None
        return self._answer(pending)

    @staticmethod
    def _synced(group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            group.sync_deadline_ms = None

    # -- Heartbeat and LeaveGroup --------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> Reply[HeartbeatResponse]:
        try:
            group = self._group(req.group_id)
            validate_member(group, req.member_id, req.group_instance_id)
            if req.generation_id != group.generation_id:
                raise _fail(E.ILLEGAL_GENERATION)
            if group.is_in(S.EMPTY):
                raise _fail(E.UNKNOWN_MEMBER_ID)
            member = group.members[req.member_id]
            member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms
            code = E.REBALANCE_IN_PROGRESS if group.is_in(S.PREPARING_REBALANCE) else E.NONE
        except GroupCoordinatorError as exc:
            code = exc.error_code
        return Reply(HeartbeatResponse(code))

    def leave_group(self, req: LeaveGroupRequest, now_ms: int) -> Reply[LeaveGroupResponse]:
        records: list[CoordinatorRecord] = []
        try:
            group = self._group(req.group_id)
        except GroupCoordinatorError as exc:
            return Reply(LeaveGroupResponse(exc.error_code))
        results = []
        for ident in req.members:
            try:
                self._leave_one(group, ident.member_id, ident.group_instance_id, now_ms, records)
                code = E.NONE
            except GroupCoordinatorError as exc:
                code = exc.error_code
            results.append(LeaveGroupMemberResponse(ident.member_id, ident.group_instance_id, code))
        return Reply(LeaveGroupResponse(E.NONE, tuple(results)), tuple(records))

    def _leave_one(
        self,
        group: ClassicGroup,
        member_id: str,
        instance_id: str | None,
        now: int,
        records: list[CoordinatorRecord],
    ) -> None:
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is None:
                raise _fail(E.UNKNOWN_MEMBER_ID)
            if member_id not in (UNKNOWN_MEMBER_ID, existing):
                raise _fail(E.FENCED_INSTANCE_ID)
            member_id = existing
        elif member_id in group.pending_members:
            del group.pending_members[member_id]
            self._maybe_complete_join(group, now, records)
            return
        elif member_id not in group.members:
            raise _fail(E.UNKNOWN_MEMBER_ID)
        self.remove_member_and_update(group, member_id, now, records)

    # -- timers --------------------------------------------------------------------

    @staticmethod
    def _kept_alive(m: ClassicGroupMember) -> bool:
        """Members waiting in a join (not new) or a sync are covered by the rebalance
        timeout, not the session timeout (Kafka's ``shouldKeepAlive``)."""
        return m.awaiting_sync is not None or (m.awaiting_join is not None and not m.is_new)

    def next_deadline_ms(self, group: ClassicGroup) -> int | None:
        deadlines = [d for d in (group.join_deadline_ms, group.sync_deadline_ms) if d is not None]
        deadlines += group.pending_members.values()
        deadlines += [
            m.heartbeat_deadline_ms for m in group.members.values() if not self._kept_alive(m)
        ]
        return min(deadlines, default=None)

    def tick(self, group: ClassicGroup, now: int, records: list[CoordinatorRecord]) -> None:
        """Fire every timer of ``group`` due at ``now``."""
        for member_id, deadline in list(group.pending_members.items()):
            if deadline <= now:
                del group.pending_members[member_id]
                self._maybe_complete_join(group, now, records)
        for m in list(group.members.values()):
            if (
                m.member_id in group.members
                and not self._kept_alive(m)
                and m.heartbeat_deadline_ms <= now
            ):
                self.remove_member_and_update(group, m.member_id, now, records)
        if (
            group.join_deadline_ms is not None
            and group.join_deadline_ms <= now
            and group.is_in(S.PREPARING_REBALANCE)
        ):
            self._on_join_deadline(group, now, records)
        if group.sync_deadline_ms is not None and group.sync_deadline_ms <= now:
            group.sync_deadline_ms = None
            if group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
                for member_id in list(group.pending_sync_members):
                    self.remove_member_and_update(group, member_id, now, records)
