"""Heartbeat (key 12): a classic member's liveness; REBALANCE_IN_PROGRESS asks it to rejoin."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import HeartbeatRequest as Beat
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import HeartbeatRequest, HeartbeatResponse

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

API_KEY = 12


def handle(
    broker: Broker, header: RequestHeader, request: HeartbeatRequest
) -> HeartbeatResponse | Awaitable[HeartbeatResponse]:
    req = Beat(request.group_id, request.generation_id, request.member_id,
               request.group_instance_id)
    coordinator = broker.groups.coordinator
    return call(broker, lambda now: coordinator.heartbeat(req, now),
                lambda answer: _encode(answer.error_code), _encode)


def _encode(code: ErrorCode) -> HeartbeatResponse:
    return HeartbeatResponse(throttle_time_ms=0, error_code=code)
