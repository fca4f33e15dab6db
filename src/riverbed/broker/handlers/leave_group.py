"""LeaveGroup (key 13): members leave at once instead of waiting for a session timeout.

v0-2 name one ``member_id`` (its error is the top-level one); v3+ a batch of members with
``group.instance.id`` (static members removed by an admin), each with its own error.
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import LeaveGroupRequest as Leave
from riverbed.coordinator import LeaveGroupResponse as Left
from riverbed.coordinator import MemberIdentity
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import LeaveGroupRequest, LeaveGroupResponse

API_KEY = 13
BATCHED_VERSION = 3


def handle(
    deps: GroupDeps, ctx: RequestContext, request: LeaveGroupRequest
) -> LeaveGroupResponse | Awaitable[LeaveGroupResponse]:
    batched = ctx.api_version >= BATCHED_VERSION
    if batched:
        members = tuple(
            MemberIdentity(m.member_id, m.group_instance_id, m.reason) for m in request.members
        )
    else:
        members = (MemberIdentity(request.member_id),)
    req = Leave(request.group_id, members)
    coordinator = deps.groups.coordinator

    def encode(answer: Left) -> LeaveGroupResponse:
        if not batched:
            code = answer.error_code
            if code == ErrorCode.NONE and answer.members:
                code = answer.members[0].error_code
            return LeaveGroupResponse(throttle_time_ms=0, error_code=code)
        return LeaveGroupResponse(
            throttle_time_ms=0,
            error_code=answer.error_code,
            members=[
                LeaveGroupResponse.MemberResponse(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    error_code=m.error_code,
                )
                for m in answer.members
            ],
        )

    return call(
        deps.groups,
        lambda now: coordinator.leave_group(req, now),
        encode,
        lambda code: LeaveGroupResponse(throttle_time_ms=0, error_code=code),
    )
