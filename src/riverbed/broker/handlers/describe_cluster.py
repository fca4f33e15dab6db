"""DescribeCluster (key 60): the one node, the cluster id, this node as controller.

Cluster authorized operations, when asked for: every operation Kafka supports on the
cluster, as Kafka answers without an authorizer (the authorization gate narrows them to the
principal's when there is one)."""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.authorized_operations import OMITTED, all_operations
from riverbed.broker.handlers.deps import ClusterInfo
from riverbed.broker.security.authorizer import ResourceType
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DescribeClusterRequest, DescribeClusterResponse

API_KEY = 60
AUTHORIZED_OPERATIONS_OMITTED = OMITTED


def handle(
    deps: ClusterInfo, ctx: RequestContext, request: DescribeClusterRequest
) -> DescribeClusterResponse:
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=1,
        cluster_id=deps.cluster_id,
        controller_id=deps.node_id,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(
                broker_id=deps.node_id,
                host=(ctx.endpoint or (deps.host, deps.port))[0],
                port=(ctx.endpoint or (deps.host, deps.port))[1],
                rack=None,
                is_fenced=False,
            )
        ],
        cluster_authorized_operations=(
            all_operations(ResourceType.CLUSTER)
            if request.include_cluster_authorized_operations
            else OMITTED
        ),
    )
