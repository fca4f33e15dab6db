"""AddOffsetsToTxn (key 25): add a group's ``__consumer_offsets`` partition to a
producer's transaction (before TxnOffsetCommit).  PRODUCER_FENCED is answered
INVALID_PRODUCER_EPOCH below v2.  While the previous transaction's markers are being
written the request waits for them instead of being answered CONCURRENT_TRANSACTIONS."""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TransactionDeps
from riverbed.broker.handlers.txn_common import call_after_markers, legacy_code
from riverbed.coordinator.transactions import AddOffsetsToTxnRequest as AddOffsets
from riverbed.coordinator.transactions import AddOffsetsToTxnResponse as Added
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

API_KEY = 25
FENCED_VERSION = 2


def handle(
    deps: TransactionDeps, ctx: RequestContext, request: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse | Awaitable[AddOffsetsToTxnResponse]:
    version = ctx.api_version
    req = AddOffsets(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
    )
    txns = deps.transactions

    def encode(answer: Added) -> AddOffsetsToTxnResponse:
        return _encode(legacy_code(answer.error_code, version, FENCED_VERSION))

    return call_after_markers(
        txns,
        req.transactional_id,
        lambda now: txns.coordinator.add_offsets_to_txn(req, now),
        lambda answer: answer.error_code == ErrorCode.CONCURRENT_TRANSACTIONS,
        encode,
        _encode,
    )


def _encode(code: ErrorCode) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=code)
