"""EndTxn (key 26): commit or abort a producer's transaction.

Answered once PrepareCommit/PrepareAbort is durable in ``__transaction_state``; the
markers are written afterwards (:mod:`riverbed.broker.transactions`).  v5+ is transaction
version 2 (KIP-890): the epoch is bumped and the response names the producer id and
epoch to use next.  PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH below v2.  An
EndTxn that arrives while the previous transaction's markers are still being written
waits for them rather than being answered CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TransactionDeps
from riverbed.broker.handlers.txn_common import call_after_markers, legacy_code
from riverbed.coordinator.transactions import TV_2
from riverbed.coordinator.transactions import EndTxnRequest as End
from riverbed.coordinator.transactions import EndTxnResponse as Ended
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import EndTxnRequest, EndTxnResponse

API_KEY = 26
FENCED_VERSION = 2
TV2_VERSION = 5


def handle(
    deps: TransactionDeps, ctx: RequestContext, request: EndTxnRequest
) -> EndTxnResponse | Awaitable[EndTxnResponse]:
    version = ctx.api_version
    req = End(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        request.committed,
        TV_2 if version >= TV2_VERSION else 0,
    )
    txns = deps.transactions

    def encode(answer: Ended) -> EndTxnResponse:
        return _encode(
            legacy_code(answer.error_code, version, FENCED_VERSION),
            answer.producer_id,
            answer.producer_epoch,
        )

    return call_after_markers(
        txns,
        req.transactional_id,
        lambda now: txns.coordinator.end_txn(req, now),
        lambda answer: answer.error_code == ErrorCode.CONCURRENT_TRANSACTIONS,
        encode,
        _encode,
    )


def _encode(code: ErrorCode, pid: int = -1, epoch: int = -1) -> EndTxnResponse:
    return EndTxnResponse(
        throttle_time_ms=0, error_code=code, producer_id=pid, producer_epoch=epoch
    )
