"""Heartbeat (key 12): a classic member's liveness; REBALANCE_IN_PROGRESS asks it to rejoin."""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import HeartbeatRequest as Beat
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import HeartbeatRequest, HeartbeatResponse

API_KEY = 12


def handle(
    deps: GroupDeps, ctx: RequestContext, request: HeartbeatRequest
) -> HeartbeatResponse | Awaitable[HeartbeatResponse]:
    req = Beat(
        request.group_id, request.generation_id, request.member_id, request.group_instance_id
    )
    coordinator = deps.groups.coordinator
    return call(
        deps.groups,
        lambda now: coordinator.heartbeat(req, now),
        lambda answer: _encode(answer.error_code),
        _encode,
    )


def _encode(code: ErrorCode) -> HeartbeatResponse:
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)
