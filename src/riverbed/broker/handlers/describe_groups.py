"""DescribeGroups (key 15): state, protocol and members of classic groups.

Unknown groups answer state "Dead" with no error (Kafka's behaviour); KIP-848 groups
answer their state and protocol type "consumer" only (clients use ConsumerGroupDescribe
for their members).  Authorized operations are not computed (-2^31, "omitted").
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import query
from riverbed.coordinator import DescribedGroup
from riverbed.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse

API_KEY = 15
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

Resp = DescribeGroupsResponse


def handle(
    deps: GroupDeps, ctx: RequestContext, request: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    coordinator = deps.groups.coordinator
    groups = list(request.groups)
    return query(
        deps.groups,
        lambda: coordinator.describe_groups(groups),
        _encode,
        lambda code: _encode([DescribedGroup(g, code) for g in groups]),
    )


def _encode(groups: list[DescribedGroup]) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(
        throttle_time_ms=0,
        groups=[
            Resp.DescribedGroup(
                error_code=g.error_code,
                error_message=None,
                group_id=g.group_id,
                group_state=g.group_state,
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_data,
                members=[
                    Resp.DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.member_metadata,
                        member_assignment=m.member_assignment,
                    )
                    for m in g.members
                ],
                authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
            )
            for g in groups
        ],
    )
