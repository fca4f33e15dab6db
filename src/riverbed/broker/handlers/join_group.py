"""JoinGroup (key 11): classic group membership; the answer waits for the rebalance.

v0 has no rebalance timeout (the session timeout is used); v4+ make a new member rejoin
with the member id it was given (MEMBER_ID_REQUIRED); v5+ carry ``group.instance.id``
(static membership); v9 lets a static leader skip assignment.  All of that is the
coordinator's; this adapter maps wire <-> :mod:`riverbed.coordinator.api` values.
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call_deferrable
from riverbed.coordinator import JoinGroupRequest as Join
from riverbed.coordinator import JoinGroupResponse as Joined
from riverbed.coordinator import SyncGroupResponse
from riverbed.protocol.messages import JoinGroupRequest, JoinGroupResponse

API_KEY = 11


def handle(
    deps: GroupDeps, ctx: RequestContext, request: JoinGroupRequest
) -> JoinGroupResponse | Awaitable[JoinGroupResponse]:
    version = ctx.api_version
    req = Join(
        group_id=request.group_id,
        member_id=request.member_id,
        protocol_type=request.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms if version >= 1 else -1,
        group_instance_id=request.group_instance_id,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
        api_version=version,
        reason=request.reason,
    )
    coordinator = deps.groups.coordinator

    def encode(answer: Joined | SyncGroupResponse) -> JoinGroupResponse:
        assert isinstance(answer, Joined)
        return _encode(answer, version)

    return call_deferrable(
        deps.groups,
        lambda now: coordinator.join_group(req, now),
        encode,
        lambda code: _encode(Joined(code, member_id=request.member_id), version),
    )


def _encode(answer: Joined, version: int) -> JoinGroupResponse:
    name = answer.protocol_name
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=answer.error_code,
        generation_id=answer.generation_id,
        protocol_type=answer.protocol_type,
        protocol_name=name if name is not None or version >= 7 else "",
        leader=answer.leader,
        skip_assignment=answer.skip_assignment,
        member_id=answer.member_id,
        members=[
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata,
            )
            for m in answer.members
        ],
    )
