"""FindCoordinator (key 10): this node coordinates every group and every transaction.

Key type 0 (group) answers our node for any key; key type 1 (transaction) first creates
``__transaction_state`` if it does not exist yet (Kafka creates it on this first use;
COORDINATOR_NOT_AVAILABLE while it cannot, e.g. a replication factor above one node, see
:mod:`riverbed.broker.transactions`).  v0-3 carry one ``key``, v4+ a batch of
``coordinator_keys`` answered one by one.  Share coordinators (2) are not served:
COORDINATOR_NOT_AVAILABLE, which clients treat as "retry later".
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import FindCoordinatorDeps
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse

API_KEY = 10
BATCHED_VERSION = 4
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


def handle(
    deps: FindCoordinatorDeps, ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse | Awaitable[FindCoordinatorResponse]:
    if request.key_type == TRANSACTION_KEY_TYPE:
        return _transaction(deps, ctx, request)
    served = request.key_type == GROUP_KEY_TYPE
    message = None if served else f"no coordinator for key type {request.key_type}"
    return _answer(deps, ctx, request, message)


async def _transaction(
    deps: FindCoordinatorDeps, ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    try:
        await deps.transactions.ensure_topic()
    except RiverbedError as exc:
        if error_code_for(exc) != ErrorCode.COORDINATOR_NOT_AVAILABLE:
            raise
        return _answer(deps, ctx, request, str(exc))
    return _answer(deps, ctx, request, None)


def _answer(
    deps: FindCoordinatorDeps,
    ctx: RequestContext,
    request: FindCoordinatorRequest,
    refused: str | None,
) -> FindCoordinatorResponse:
    """Our node for every key, or COORDINATOR_NOT_AVAILABLE (``refused``) for all."""
    code = ErrorCode.NONE if refused is None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    host, port = ctx.endpoint or (deps.host, deps.port)  # the listener asked on
    node, host, port = (deps.node_id, host, port) if refused is None else (-1, "", -1)
    if ctx.api_version >= BATCHED_VERSION:
        return FindCoordinatorResponse(
            throttle_time_ms=0,
            coordinators=[
                FindCoordinatorResponse.Coordinator(
                    key=key,
                    node_id=node,
                    host=host,
                    port=port,
                    error_code=code,
                    error_message=refused,
                )
                for key in request.coordinator_keys
            ],
        )
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        error_code=code,
        error_message=refused,
        node_id=node,
        host=host,
        port=port,
    )
