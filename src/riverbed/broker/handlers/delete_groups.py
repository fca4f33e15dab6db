"""DeleteGroups (key 42): delete empty groups and their committed offsets (tombstones).

Groups with members answer NON_EMPTY_GROUP, unknown ones GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import DeletedGroup
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

API_KEY = 42


def handle(
    broker: Broker, header: RequestHeader, request: DeleteGroupsRequest
) -> DeleteGroupsResponse | Awaitable[DeleteGroupsResponse]:
    coordinator = broker.groups.coordinator
    names = list(request.groups_names)
    return call(
        broker, lambda now: coordinator.delete_groups(names, now), _encode,
        lambda code: _encode([DeletedGroup(g, code) for g in names]),
    )


def _encode(results: list[DeletedGroup]) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[DeleteGroupsResponse.DeletableGroupResult(group_id=r.group_id,
                                                           error_code=r.error_code)
                 for r in results],
    )
