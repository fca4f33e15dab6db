"""DescribeCluster (key 60): the one node, the cluster id, this node as controller."""

from __future__ import annotations

from typing import TYPE_CHECKING

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import DescribeClusterRequest, DescribeClusterResponse

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

API_KEY = 60
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def handle(
    broker: Broker, header: RequestHeader, request: DescribeClusterRequest
) -> DescribeClusterResponse:
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=1,
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(
                broker_id=broker.node_id,
                host=broker.host,
                port=broker.port,
                rack=None,
                is_fenced=False,
            )
        ],
        cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )
