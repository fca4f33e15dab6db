"""DescribeTransactions and ListTransactions: read-only views of the coordinator's state.

Kafka's ``handleDescribeTransactions``: an empty id is INVALID_REQUEST, an unknown one
TRANSACTIONAL_ID_NOT_FOUND; while a transaction's markers are written, its topics are the
partitions still without a marker (Kafka removes each as it is acknowledged).
``TransactionStateManager.listTransactionStates``: state filters name states exactly
(``Ongoing``, ``PrepareCommit``, ...; unknown names come back in ``unknown_state_filters``
and match nothing), producer id filters, a duration filter
(``now - start > duration``, v1) and a transactional-id regular expression that must match
the whole id (v2, KIP-1152; Java's ``Matcher.matches``, here :func:`re.fullmatch`).  An
invalid pattern is INVALID_REQUEST.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from riverbed.coordinator.transactions.transaction_api import (
    DescribedTransaction,
    ListedTransaction,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from riverbed.coordinator.transactions.transaction_context import TransactionContext
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.topic_partition import TopicPartition

E = ErrorCode


def describe(
    ctx: TransactionContext, transactional_ids: Iterable[str]
) -> list[DescribedTransaction]:
    out = []
    for transactional_id in transactional_ids:
        meta = ctx.txns.get(transactional_id)
        if not transactional_id:
            out.append(DescribedTransaction(transactional_id, E.INVALID_REQUEST))
        elif meta is None or meta.state is TransactionState.DEAD:
            out.append(DescribedTransaction(transactional_id, E.TRANSACTIONAL_ID_NOT_FOUND))
        else:
            out.append(
                DescribedTransaction(
                    transactional_id,
                    E.NONE,
                    meta.state.wire_name,
                    meta.timeout_ms,
                    meta.start_ms,
                    meta.producer_id,
                    meta.producer_epoch,
                    _topics(ctx.awaiting.get(transactional_id, meta.partitions)),
                )
            )
    return out


def _topics(partitions: Iterable[TopicPartition]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return tuple((t, tuple(p)) for t, p in by_topic.items())


def list_transactions(
    ctx: TransactionContext, req: ListTransactionsRequest, now_ms: int
) -> ListTransactionsResponse:
    states = {TransactionState.from_wire(n) for n in req.state_filters} - {None}
    unknown = tuple(n for n in req.state_filters if TransactionState.from_wire(n) is None)
    pattern = None
    if req.transactional_id_pattern:
        try:
            pattern = re.compile(req.transactional_id_pattern)
        except re.error:
            return ListTransactionsResponse(E.INVALID_REQUEST)
    producer_ids = set(req.producer_id_filters)
    listed = []
    for transactional_id, meta in sorted(ctx.txns.items()):
        if req.state_filters and meta.state not in states:
            continue
        if producer_ids and meta.producer_id not in producer_ids:
            continue
        if req.duration_filter_ms >= 0 and now_ms - meta.start_ms <= req.duration_filter_ms:
            continue
        if pattern is not None and not pattern.fullmatch(transactional_id):
            continue
        listed.append(ListedTransaction(transactional_id, meta.producer_id, meta.state.wire_name))
    return ListTransactionsResponse(E.NONE, unknown, tuple(listed))
