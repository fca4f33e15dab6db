"""What the group API adapters share: calling the coordinator and waiting for answers.

Every group handler decodes its request into a :mod:`riverbed.coordinator.api` value,
calls :meth:`GroupService.execute` (synchronously, so calls reach the coordinator in
arrival order) and encodes the answer for the request's version.  A
:class:`~riverbed.coordinator.Pending` answer becomes an awaitable resolved by the
coordinator's completion; a coordinator that is shutting down answers
COORDINATOR_NOT_AVAILABLE.  Event-loop only.

The client's host (JoinGroup, ConsumerGroupHeartbeat) comes from the
:class:`~riverbed.broker.context.RequestContext` the connection builds for each request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TypeVar

from riverbed.broker.groups import CoordinatorClosedError, Deferred
from riverbed.broker.handlers.deps import GroupsPort
from riverbed.coordinator import Pending, Reply
from riverbed.protocol.error_codes import ErrorCode

R = TypeVar("R")
W = TypeVar("W")


def call(
    groups: GroupsPort,
    handler: Callable[[int], Reply[R]],
    encode: Callable[[R], W],
    error: Callable[[ErrorCode], W],
) -> W | Awaitable[W]:
    """Run a coordinator call that never defers; COORDINATOR_NOT_AVAILABLE when closed.

    If the call wrote records under a durable flush policy, the answer waits for the
    fsync that covers them (an awaitable is returned; the connection keeps answers in
    request order)."""
    try:
        executed = groups.execute(handler)
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if executed.flushes:
        return _after_flush(executed.flushes, encode(executed.response))
    return encode(executed.response)


async def _after_flush(flushes: tuple[concurrent.futures.Future[None], ...], answer: W) -> W:
    for fut in flushes:
        await asyncio.wrap_future(fut)
    return answer


def call_deferrable(
    groups: GroupsPort,
    handler: Callable[[int], Reply[R | Pending]],
    encode: Callable[[R | Deferred], W],
    error: Callable[[ErrorCode], W],
) -> W | Awaitable[W]:
    """Run a call that may answer Pending (JoinGroup, SyncGroup).  Its flushes are not
    awaited (the records are membership state, not acknowledged offsets)."""
    try:
        response = groups.execute(handler).response
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if isinstance(response, Pending):
        return _deferred(groups, response, encode, error)
    return encode(response)


async def _deferred(
    groups: GroupsPort,
    pending: Pending,
    encode: Callable[[R | Deferred], W],
    error: Callable[[ErrorCode], W],
) -> W:
    try:
        answer = await groups.wait(pending)
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return encode(answer)


def query(
    groups: GroupsPort,
    fn: Callable[[], R],
    encode: Callable[[R], W],
    error: Callable[[ErrorCode], W],
) -> W:
    """A read-only coordinator call."""
    try:
        return encode(groups.query(fn))
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
