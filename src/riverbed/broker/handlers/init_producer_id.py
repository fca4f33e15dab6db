"""InitProducerId (key 22): producer ids and epochs, for idempotent and transactional
producers.

Without a transactional id: a new id at epoch 0, or — when the producer presents its
current id and epoch (KIP-360) — the same id with the epoch bumped.  With one: the
transaction coordinator (:mod:`riverbed.broker.transactions`) bumps the id's epoch,
fencing older instances and aborting their open transaction, after creating
``__transaction_state`` on first use.  While that abort's (or a previous commit's)
markers are being written the request waits for them and then runs again, as the
client's retry of CONCURRENT_TRANSACTIONS would (answered so only if they take longer
than ``MARKERS_WAIT_S``).  v0-5 are served (v6, KIP-939's keep_prepared_txn, is not);
PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH below v4.
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import InitProducerIdDeps
from riverbed.broker.handlers.txn_common import call_after_markers, legacy_code
from riverbed.coordinator.transactions import InitProducerIdRequest as Init
from riverbed.coordinator.transactions import InitProducerIdResponse as Inited
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import InitProducerIdRequest, InitProducerIdResponse

API_KEY = 22
FENCED_VERSION = 4


def handle(
    deps: InitProducerIdDeps, ctx: RequestContext, request: InitProducerIdRequest
) -> InitProducerIdResponse | Awaitable[InitProducerIdResponse]:
    if request.transactional_id is not None:
        return _transactional(deps, ctx.api_version, request)
    pid, epoch = deps.producer_ids.init_producer(
        getattr(request, "producer_id", -1), getattr(request, "producer_epoch", -1)
    )
    return _encode(ErrorCode.NONE, pid, epoch)


async def _transactional(
    deps: InitProducerIdDeps, version: int, request: InitProducerIdRequest
) -> InitProducerIdResponse:
    txns = deps.transactions
    try:
        await txns.ensure_topic()
    except RiverbedError as exc:
        return _encode(error_code_for(exc))
    req = Init(
        request.transactional_id,
        request.transaction_timeout_ms,
        request.producer_id if version >= 3 else -1,
        request.producer_epoch if version >= 3 else -1,
    )

    def encode(answer: Inited) -> InitProducerIdResponse:
        code = legacy_code(answer.error_code, version, FENCED_VERSION)
        return _encode(code, answer.producer_id, answer.producer_epoch)

    result = call_after_markers(
        txns,
        request.transactional_id or "",
        lambda now: txns.coordinator.init_producer_id(req, now),
        lambda answer: answer.error_code == ErrorCode.CONCURRENT_TRANSACTIONS,
        encode,
        _encode,
    )
    if isinstance(result, InitProducerIdResponse):
        return result
    return await result


def _encode(code: ErrorCode, pid: int = -1, epoch: int = -1) -> InitProducerIdResponse:
    return InitProducerIdResponse(
        throttle_time_ms=0, error_code=code, producer_id=pid, producer_epoch=epoch
    )
