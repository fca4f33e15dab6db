"""Byte-rate quotas around Produce and Fetch: ``throttle_time_ms`` (KIP-13, KIP-219).

:func:`throttle_produce` and :func:`throttle_fetch` wrap the bound Produce and Fetch
routes (:func:`riverbed.broker.handlers.bind_handlers`), so the API adapters stay as they
are.  The quota of a request is looked up by its principal's name (``User:alice`` ->
``alice``; ``ANONYMOUS`` on PLAINTEXT) and its header client id in the
:class:`~riverbed.broker.quotas.ClientQuotaManager`; without a quota nothing is recorded.

* Produce: the request's record bytes (the ``records`` of every partition; Kafka counts
  the whole request size, a few dozen bytes more) are recorded when it arrives; a
  throttle time goes into the response's ``throttle_time_ms``.  acks=0 has no response
  and so no throttle (the bytes still count against the client's next acknowledged
  request).
* Fetch: ``max_bytes`` is capped to what the quota window can hold (Kafka's
  ``getMaxValueInQuotaWindow``); the response's record bytes are recorded when it is
  ready; if that throttles, the bytes are taken back and the response is sent without
  data (no topics), as Kafka does, with the throttle time.

The connection (:mod:`riverbed.broker.connection`) mutes the channel for
``throttle_time_ms`` after sending such a response (KIP-219), and clients back off for it
too.  Event-loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, Protocol

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.quotas import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, ClientQuotaManager
from riverbed.protocol.messages import FetchRequest, FetchResponse, ProduceRequest

Route = Any  # Callable[[RequestContext, Any], Any | Awaitable[Any]]; see handlers.Route


class ThrottleDeps(Protocol):
    @property
    def client_quotas(self) -> ClientQuotaManager: ...


def quota_user(principal: str) -> str:
    """Kafka's user name of a principal: ``User:alice`` -> ``alice``."""
    _, sep, name = principal.partition(":")
    return name if sep else principal


def produce_bytes(request: ProduceRequest) -> int:
    return sum(len(p.records) for t in request.topic_data for p in t.partition_data if p.records)


def fetch_bytes(response: FetchResponse) -> int:
    return sum(len(p.records) for t in response.responses for p in t.partitions if p.records)


def throttle_produce(deps: ThrottleDeps, route: Route) -> Route:
    """``route`` (Produce) with the producer byte-rate quota applied."""

    def handle(ctx: RequestContext, request: ProduceRequest) -> Any:
        throttle_ms = deps.client_quotas.record(
            PRODUCER_BYTE_RATE, quota_user(ctx.principal), ctx.client_id, produce_bytes(request)
        )
        result = route(ctx, request)
        if throttle_ms <= 0 or result is None:
            return result
        if isinstance(result, Barrier):  # a transactional produce waiting for markers
            return Barrier(_set_throttle(result.awaitable, throttle_ms))
        if isinstance(result, Awaitable):
            return asyncio.ensure_future(_set_throttle(result, throttle_ms))
        result.throttle_time_ms = throttle_ms
        return result

    return handle


async def _set_throttle(result: Awaitable[Any], throttle_ms: int) -> Any:
    response = await result
    if response is not None:
        response.throttle_time_ms = throttle_ms
    return response


def throttle_fetch(deps: ThrottleDeps, route: Route) -> Route:
    """``route`` (Fetch) with the consumer byte-rate quota applied."""

    def handle(ctx: RequestContext, request: FetchRequest) -> Any:
        quotas = deps.client_quotas
        user = quota_user(ctx.principal)
        cap = quotas.max_value_in_window(CONSUMER_BYTE_RATE, user, ctx.client_id)
        if cap is None:
            return route(ctx, request)
        if request.max_bytes <= 0 or request.max_bytes > cap:
            request.max_bytes = cap
        result = route(ctx, request)
        if isinstance(result, Awaitable):
            return asyncio.ensure_future(_after_fetch(quotas, user, ctx.client_id, result))
        return _record_fetch(quotas, user, ctx.client_id, result)

    return handle


async def _after_fetch(
    quotas: ClientQuotaManager, user: str, client_id: str, result: Awaitable[FetchResponse]
) -> FetchResponse:
    return _record_fetch(quotas, user, client_id, await result)


def _record_fetch(
    quotas: ClientQuotaManager, user: str, client_id: str, response: FetchResponse
) -> FetchResponse:
    size = fetch_bytes(response)
    throttle_ms = quotas.record(CONSUMER_BYTE_RATE, user, client_id, size)
    if throttle_ms > 0:
        quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, size)
        response.responses = []
        response.throttle_time_ms = throttle_ms
    return response
