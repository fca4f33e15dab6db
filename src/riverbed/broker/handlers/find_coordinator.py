"""FindCoordinator (key 10): this node coordinates every group.

Key type 0 (group) answers our node for any key; v0-3 carry one ``key``, v4+ a batch of
``coordinator_keys`` answered one by one.  Transaction (1) and share (2) coordinators are
not served: COORDINATOR_NOT_AVAILABLE, which clients treat as "retry later".
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import ClusterInfo
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse

API_KEY = 10
BATCHED_VERSION = 4
GROUP_KEY_TYPE = 0


def handle(
    deps: ClusterInfo, ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    served = request.key_type == GROUP_KEY_TYPE
    code = ErrorCode.NONE if served else ErrorCode.COORDINATOR_NOT_AVAILABLE
    message = None if served else f"no coordinator for key type {request.key_type}"
    host, port = ctx.endpoint or (deps.host, deps.port)  # the listener asked on
    node, host, port = (deps.node_id, host, port) if served else (-1, "", -1)
    if ctx.api_version >= BATCHED_VERSION:
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            coordinators=[
                FindCoordinatorResponse.Coordinator(
                    key=key, node_id=node, host=host, port=port, error_code=code,
                    error_message=message,
                )
                for key in request.coordinator_keys
            ],
        )
    return FindCoordinatorResponse(
        throttle_time_ms=0, error_code=code, error_message=message, node_id=node, host=host,
        port=port,
    )
