"""DescribeTransactions (key 65): the state of transactional ids (``kafka-transactions
describe``).  An unknown id answers TRANSACTIONAL_ID_NOT_FOUND; before
``__transaction_state`` exists every id is unknown."""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TransactionDeps
from riverbed.protocol.messages import DescribeTransactionsRequest, DescribeTransactionsResponse

API_KEY = 65

State = DescribeTransactionsResponse.TransactionState


def handle(
    deps: TransactionDeps, ctx: RequestContext, request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    txns = deps.transactions
    described = txns.query(
        lambda: txns.coordinator.describe_transactions(request.transactional_ids)
    )
    return DescribeTransactionsResponse(
        throttle_time_ms=0,
        transaction_states=[
            State(
                error_code=d.error_code,
                transactional_id=d.transactional_id,
                transaction_state=d.transaction_state,
                transaction_timeout_ms=d.transaction_timeout_ms,
                transaction_start_time_ms=d.transaction_start_time_ms,
                producer_id=d.producer_id,
                producer_epoch=d.producer_epoch,
                topics=[
                    DescribeTransactionsResponse.TopicData(topic=t, partitions=list(ps))
                    for t, ps in d.topics
                ],
            )
            for d in described
        ],
    )
