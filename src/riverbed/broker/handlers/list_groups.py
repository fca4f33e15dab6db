"""ListGroups (key 16): every group, with v4+ state and v5+ type filters."""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import query
from riverbed.coordinator import ListedGroup
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ListGroupsRequest, ListGroupsResponse

API_KEY = 16


def handle(deps: GroupDeps, ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    coordinator = deps.groups.coordinator

    def encode(groups: list[ListedGroup]) -> ListGroupsResponse:
        return ListGroupsResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            groups=[
                ListGroupsResponse.ListedGroup(
                    group_id=g.group_id,
                    protocol_type=g.protocol_type,
                    group_state=g.group_state,
                    group_type=g.group_type,
                )
                for g in groups
            ],
        )

    return query(
        deps.groups,
        lambda: coordinator.list_groups(request.states_filter, request.types_filter),
        encode,
        lambda code: ListGroupsResponse(throttle_time_ms=0, error_code=code, groups=[]),
    )
