"""What the group API adapters share: calling the coordinator and waiting for answers.

Every group handler decodes its request into a :mod:`riverbed.coordinator.api` value,
calls :meth:`GroupService.execute` (synchronously, so calls reach the coordinator in
arrival order) and encodes the answer for the request's version.  A
:class:`~riverbed.coordinator.Pending` answer becomes an awaitable resolved by the
coordinator's completion; a coordinator that is shutting down answers
COORDINATOR_NOT_AVAILABLE.  Event-loop only.

Client host: handlers get ``(broker, header, request)``, not the connection, so the
member's address comes from :data:`CLIENT_ADDRESS`, a context variable the connection
sets around each handler call (``CLIENT_ADDRESS.set(peer_ip)`` before, ``reset`` after);
unset, members are reported at :data:`DEFAULT_CLIENT_HOST` (we listen on loopback).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

from riverbed.broker.groups import CoordinatorClosedError, Deferred
from riverbed.coordinator import Pending, Reply
from riverbed.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

R = TypeVar("R")
W = TypeVar("W")

DEFAULT_CLIENT_HOST = "/127.0.0.1"
CLIENT_ADDRESS: ContextVar[str | None] = ContextVar("riverbed_client_address", default=None)
"""The peer IP of the request being handled (set by the connection), or None."""


def client_host() -> str:
    """The requesting client's host as Kafka reports it (``InetAddress.toString``:
    ``/<ip>``)."""
    address = CLIENT_ADDRESS.get()
    return f"/{address}" if address else DEFAULT_CLIENT_HOST


def call(
    broker: Broker,
    handler: Callable[[int], Reply[R]],
    encode: Callable[[R], W],
    error: Callable[[ErrorCode], W],
) -> W | Awaitable[W]:
    """Run a coordinator call that never defers; COORDINATOR_NOT_AVAILABLE when closed.

    If the call wrote records under a durable flush policy, the answer waits for the
    fsync that covers them (an awaitable is returned; the connection keeps answers in
    request order)."""
    try:
        response = broker.groups.execute(handler)
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    flushes = broker.groups.take_flush_futures()
    if flushes:
        return _after_flush(flushes, encode(response))
    return encode(response)


async def _after_flush(flushes: list[concurrent.futures.Future[None]], answer: W) -> W:
    for fut in flushes:
        await asyncio.wrap_future(fut)
    return answer


def call_deferrable(
    broker: Broker,
    handler: Callable[[int], Reply[R | Pending]],
    encode: Callable[[R | Deferred], W],
    error: Callable[[ErrorCode], W],
) -> W | Awaitable[W]:
    """Run a call that may answer Pending (JoinGroup, SyncGroup)."""
    try:
        response = broker.groups.execute(handler)
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if isinstance(response, Pending):
        return _deferred(broker, response, encode, error)
    return encode(response)


async def _deferred(
    broker: Broker,
    pending: Pending,
    encode: Callable[[R | Deferred], W],
    error: Callable[[ErrorCode], W],
) -> W:
    try:
        answer = await broker.groups.wait(pending)
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return encode(answer)


def query(broker: Broker, fn: Callable[[], R], encode: Callable[[R], W],
          error: Callable[[ErrorCode], W]) -> W:
    """A read-only coordinator call."""
    try:
        return encode(broker.groups.query(fn))
    except CoordinatorClosedError:
        return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
