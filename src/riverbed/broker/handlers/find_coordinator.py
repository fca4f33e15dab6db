"""FindCoordinator (key 10): this node coordinates every group and every transaction.

Key type 0 (group) first creates ``__consumer_offsets`` if it does not exist yet (Kafka
creates it on this first use); a creation slower than ``GROUP_TOPIC_WAIT_S`` (a loaded
disk) answers COORDINATOR_NOT_AVAILABLE, retriable, while it goes on.  Key type 1
(transaction) likewise creates ``__transaction_state`` (COORDINATOR_NOT_AVAILABLE while
it cannot, e.g. a replication factor above one node, see
:mod:`riverbed.broker.transactions`).  v0-3 carry one ``key``, v4+ a batch of
``coordinator_keys`` answered one by one.  Share coordinators (2) are not served:
COORDINATOR_NOT_AVAILABLE, which clients treat as "retry later".
"""

from __future__ import annotations

import asyncio
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
GROUP_TOPIC_WAIT_S = 5.0
"""How long a FindCoordinator for a group waits for ``__consumer_offsets`` to be created."""


def handle(
    deps: FindCoordinatorDeps, ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse | Awaitable[FindCoordinatorResponse]:
    if request.key_type == TRANSACTION_KEY_TYPE:
        return _transaction(deps, ctx, request)
    if request.key_type == GROUP_KEY_TYPE and not deps.groups.ready:
        return _group(deps, ctx, request)
    served = request.key_type == GROUP_KEY_TYPE
    message = None if served else f"no coordinator for key type {request.key_type}"
    return _answer(deps, ctx, request, message)


async def _group(
    deps: FindCoordinatorDeps, ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    creating = asyncio.ensure_future(deps.groups.ensure_topic())
    try:
        await asyncio.wait_for(asyncio.shield(creating), GROUP_TOPIC_WAIT_S)
    except TimeoutError:
        return _answer(deps, ctx, request, "the group coordinator is loading")
    except RiverbedError as exc:
        if error_code_for(exc) != ErrorCode.COORDINATOR_NOT_AVAILABLE:
            raise
        return _answer(deps, ctx, request, str(exc))
    return _answer(deps, ctx, request, None)


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
