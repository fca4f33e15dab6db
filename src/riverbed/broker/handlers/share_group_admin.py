"""Share groups beside consumer groups in the group APIs: route wrappers.

Share groups live in their own service (:mod:`riverbed.broker.share_groups`), not in the
group coordinator, so the group APIs that span every group type are wrapped here, at
binding (:func:`riverbed.broker.handlers.bind_handlers`), and their adapters stay as
they are:

* ListGroups: the share groups are added (protocol type and group type ``share``),
  honouring the v4 states filter and the v5 types filter;
* DeleteGroups: share group ids are deleted by the share service (an empty group only:
  NON_EMPTY_GROUP otherwise), the rest by the group coordinator;
* IncrementalAlterConfigs / DescribeConfigs: GROUP resources set and list share group
  configs
  (:mod:`.share_group_configs`);
* DescribeGroups v6+ of a share group's id answers GROUP_ID_NOT_FOUND, "Group X is not a
  classic group." (older versions: Dead), as Kafka 4.4 does;
* ConsumerGroupHeartbeat on a share group's id answers GROUP_ID_NOT_FOUND ("Group X is
  not a consumer group"), JoinGroup INCONSISTENT_GROUP_PROTOCOL, as Kafka 4 does (the
  reverse, ShareGroupHeartbeat on a consumer group's id, is refused by the share
  coordinator itself).

Event-loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Protocol

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.share_deps import SharePort
from riverbed.broker.handlers.share_group_configs import (
    GroupConfigs,
    alter_configs,
    describe_configs,
    incremental_alter_configs,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)

Route = Any  # Callable[[RequestContext, Any], Any | Awaitable[Any]]; see handlers.Route
SHARE = "share"
LIST_GROUPS, JOIN_GROUP, DELETE_GROUPS, CONSUMER_GROUP_HEARTBEAT = 16, 11, 42, 68
INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CONFIGS, DESCRIBE_GROUPS = 44, 32, 15
ALTER_CONFIGS = 33
DESCRIBE_GROUPS_ERRORS_VERSION = 6  # DescribedGroup.ErrorMessage


class ShareHost(Protocol):
    """The broker: its share group service exists once started (read per request)."""

    @property
    def share_groups(self) -> ShareAdminPort: ...


class ShareAdminPort(SharePort, GroupConfigs, Protocol):
    """The share group service as the wrapped group and config routes use it."""


def wrap_group_routes(host: ShareHost, routes: dict[int, Route]) -> None:
    """Wrap the bound ListGroups, DeleteGroups, DescribeGroups, ConsumerGroupHeartbeat,
    JoinGroup, DescribeConfigs, IncrementalAlterConfigs and AlterConfigs routes (in
    place)."""
    routes[LIST_GROUPS] = list_groups(host, routes[LIST_GROUPS])
    routes[DELETE_GROUPS] = delete_groups(host, routes[DELETE_GROUPS])
    routes[CONSUMER_GROUP_HEARTBEAT] = consumer_group_heartbeat(
        host, routes[CONSUMER_GROUP_HEARTBEAT]
    )
    routes[JOIN_GROUP] = join_group(host, routes[JOIN_GROUP])
    routes[DESCRIBE_GROUPS] = describe_groups(host, routes[DESCRIBE_GROUPS])
    routes[DESCRIBE_CONFIGS] = describe_configs(host, routes[DESCRIBE_CONFIGS])
    routes[INCREMENTAL_ALTER_CONFIGS] = incremental_alter_configs(
        host, routes[INCREMENTAL_ALTER_CONFIGS]
    )
    routes[ALTER_CONFIGS] = alter_configs(host, routes[ALTER_CONFIGS])  # GROUP resources


def list_groups(host: ShareHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: ListGroupsRequest) -> Any:
        response = route(ctx, request)
        shares = host.share_groups
        if isinstance(response, ListGroupsResponse) and response.error_code == ErrorCode.NONE:
            for group_id, state in shares.list_groups(
                request.states_filter or (), request.types_filter or ()
            ):
                response.groups.append(
                    ListGroupsResponse.ListedGroup(
                        group_id=group_id,
                        protocol_type=SHARE,
                        group_state=state,
                        group_type=SHARE,
                    )
                )
        return response

    return handle


def delete_groups(host: ShareHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> Any:
        shares = host.share_groups
        names = list(request.groups_names)
        share_results = {g: shares.delete_group(g) for g in names if shares.is_share_group(g)}
        if not share_results:
            return route(ctx, request)
        others = [g for g in names if g not in share_results]
        mine = [
            DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=code)
            for g, code in share_results.items()
        ]
        if not others:
            return DeleteGroupsResponse(throttle_time_ms=0, results=mine)
        request.groups_names = others
        return _merge(route(ctx, request), mine)

    return handle


def _merge(
    response: DeleteGroupsResponse | Awaitable[DeleteGroupsResponse],
    mine: list[DeleteGroupsResponse.DeletableGroupResult],
) -> DeleteGroupsResponse | Awaitable[DeleteGroupsResponse]:
    if isinstance(response, DeleteGroupsResponse):
        response.results.extend(mine)
        return response

    async def later() -> DeleteGroupsResponse:
        answer = await response
        answer.results.extend(mine)
        return answer

    return asyncio.ensure_future(later())


def consumer_group_heartbeat(host: ShareHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: ConsumerGroupHeartbeatRequest) -> Any:
        if host.share_groups.is_share_group(request.group_id):
            return ConsumerGroupHeartbeatResponse(
                throttle_time_ms=0,
                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=f"Group {request.group_id} is not a consumer group.",
                member_id=request.member_id,
                member_epoch=request.member_epoch,
                heartbeat_interval_ms=0,
                assignment=None,
            )
        return route(ctx, request)

    return handle


def join_group(host: ShareHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: JoinGroupRequest) -> Any:
        if host.share_groups.is_share_group(request.group_id):
            return JoinGroupResponse(
                throttle_time_ms=0,
                error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                generation_id=-1,
                member_id=request.member_id,
            )
        return route(ctx, request)

    return handle


def describe_groups(host: ShareHost, route: Route) -> Route:
    def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> Any:
        response = route(ctx, request)
        if ctx.api_version < DESCRIBE_GROUPS_ERRORS_VERSION:
            return response
        shares = host.share_groups

        def mark(answer: DescribeGroupsResponse) -> DescribeGroupsResponse:
            for group in answer.groups:
                if shares.is_share_group(group.group_id):
                    group.error_code = ErrorCode.GROUP_ID_NOT_FOUND
                    group.error_message = f"Group {group.group_id} is not a classic group."
            return answer

        if isinstance(response, DescribeGroupsResponse):
            return mark(response)

        async def later() -> DescribeGroupsResponse:
            return mark(await response)

        return asyncio.ensure_future(later())

    return handle
