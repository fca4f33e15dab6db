"""SyncGroup (key 14): the leader hands in the assignment; followers wait for theirs.

v3+ carry ``group.instance.id``; v5+ the protocol type and name (checked by the
coordinator, echoed back).
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call_deferrable
from riverbed.coordinator import JoinGroupResponse
from riverbed.coordinator import SyncGroupRequest as Sync
from riverbed.coordinator import SyncGroupResponse as Synced
from riverbed.protocol.messages import SyncGroupRequest, SyncGroupResponse

API_KEY = 14


def handle(
    deps: GroupDeps, ctx: RequestContext, request: SyncGroupRequest
) -> SyncGroupResponse | Awaitable[SyncGroupResponse]:
    req = Sync(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        protocol_type=request.protocol_type,
        protocol_name=request.protocol_name,
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in request.assignments),
    )
    coordinator = deps.groups.coordinator

    def encode(answer: Synced | JoinGroupResponse) -> SyncGroupResponse:
        assert isinstance(answer, Synced)
        return _encode(answer)

    return call_deferrable(
        deps.groups,
        lambda now: coordinator.sync_group(req, now),
        encode,
        lambda code: _encode(Synced(code)),
    )


def _encode(answer: Synced) -> SyncGroupResponse:
    return SyncGroupResponse(
        throttle_time_ms=0,
        error_code=answer.error_code,
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name,
        assignment=answer.assignment,
    )
