"""DeleteGroups (key 42): delete empty groups and their committed offsets (tombstones).

Groups with members answer NON_EMPTY_GROUP, unknown ones GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import DeletedGroup
from riverbed.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse

API_KEY = 42


def handle(
    deps: GroupDeps, ctx: RequestContext, request: DeleteGroupsRequest
) -> DeleteGroupsResponse | Awaitable[DeleteGroupsResponse]:
    coordinator = deps.groups.coordinator
    names = list(request.groups_names)
    return call(
        deps.groups,
        lambda now: coordinator.delete_groups(names, now),
        _encode,
        lambda code: _encode([DeletedGroup(g, code) for g in names]),
    )


def _encode(results: list[DeletedGroup]) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=r.group_id, error_code=r.error_code)
            for r in results
        ],
    )
