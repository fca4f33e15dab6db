"""InitProducerId (key 22): producer ids and epochs for idempotent producers.

Without a transactional id: a new id at epoch 0, or — when the producer presents its
current id and epoch (KIP-360) — the same id with the epoch bumped.  Transactional ids
need the transaction coordinator, which this broker does not run: they are refused with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (:class:`TransactionsUnsupported`).
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import ProducerIdDeps
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

API_KEY = 22


class TransactionsUnsupported(RiverbedError):
    """A transactional id, with no transaction coordinator to own it."""

    error_code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def handle(
    deps: ProducerIdDeps, ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        exc = TransactionsUnsupported("transactions are not supported by this broker")
        return InitProducerIdResponse(
            throttle_time_ms=0, error_code=error_code_for(exc), producer_id=-1, producer_epoch=-1
        )
    pid, epoch = deps.producer_ids.init_producer(
        getattr(request, "producer_id", -1), getattr(request, "producer_epoch", -1)
    )
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=pid, producer_epoch=epoch
    )
