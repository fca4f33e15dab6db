"""DescribeGroups (key 15): state, protocol and members of classic groups.

Unknown groups answer state "Dead" with no error (Kafka's behaviour); KIP-848 groups
answer their state and protocol type "consumer" only (clients use ConsumerGroupDescribe
for their members).  Authorized operations (v3+), when asked for, for each group answered
without error: every operation Kafka supports on a group, as Kafka answers without an
authorizer (the authorization gate narrows them to the principal's when there is one).
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.authorized_operations import OMITTED, all_operations
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import query
from riverbed.broker.security.authorizer import ResourceType
from riverbed.coordinator import DescribedGroup
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse

API_KEY = 15
AUTHORIZED_OPERATIONS_OMITTED = OMITTED

Resp = DescribeGroupsResponse


def handle(
    deps: GroupDeps, ctx: RequestContext, request: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    coordinator = deps.groups.coordinator
    groups = list(request.groups)
    ops = all_operations(ResourceType.GROUP) if request.include_authorized_operations else OMITTED
    return query(
        deps.groups,
        lambda: coordinator.describe_groups(groups),
        lambda described: _encode(described, ops),
        lambda code: _encode([DescribedGroup(g, code) for g in groups], ops),
    )


def _encode(groups: list[DescribedGroup], ops: int) -> DescribeGroupsResponse:
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
                authorized_operations=ops if g.error_code == ErrorCode.NONE else OMITTED,
            )
            for g in groups
        ],
    )
