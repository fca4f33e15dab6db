"""ListTransactions (key 66): transactional ids by state, producer id, duration (v1+) and
id pattern (v2+, KIP-1152) (``kafka-transactions list``).  An invalid pattern answers
INVALID_REGULAR_EXPRESSION (the coordinator's check)."""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TransactionDeps
from riverbed.coordinator.transactions import ListTransactionsRequest as ListTxns
from riverbed.protocol.messages import ListTransactionsRequest, ListTransactionsResponse

API_KEY = 66
DURATION_VERSION = 1
PATTERN_VERSION = 2


def handle(
    deps: TransactionDeps, ctx: RequestContext, request: ListTransactionsRequest
) -> ListTransactionsResponse:
    version = ctx.api_version
    req = ListTxns(
        tuple(request.state_filters),
        tuple(request.producer_id_filters),
        request.duration_filter if version >= DURATION_VERSION else -1,
        request.transactional_id_pattern if version >= PATTERN_VERSION else None,
    )
    txns = deps.transactions
    now = txns.now_ms()
    answer = txns.query(lambda: txns.coordinator.list_transactions(req, now))
    return ListTransactionsResponse(
        throttle_time_ms=0,
        error_code=answer.error_code,
        unknown_state_filters=list(answer.unknown_state_filters),
        transaction_states=[
            ListTransactionsResponse.TransactionState(
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                transaction_state=t.transaction_state,
            )
            for t in answer.transactions
        ],
    )
