"""InitProducerId with a transactional id: a producer id and a new epoch, fencing the last.

Follows Kafka's ``TransactionCoordinator.handleInitProducerId`` /
``prepareInitProducerIdTransit`` and ``TransactionMetadata.prepareIncrementProducerEpoch``
/ ``prepareProducerIdRotation``:

* no transactional id: an idempotent producer -- a fresh producer id at epoch 0, nothing
  stored; an empty one: INVALID_REQUEST; ``transaction.timeout.ms`` not in
  ``(0, transaction.max.timeout.ms]``: INVALID_TRANSACTION_TIMEOUT (nothing written);
* a first InitProducerId creates the id (a new producer id, epoch 0);
* a producer that re-initializes names its current id and epoch (KIP-360); a producer id
  that is neither the current one nor (with an exhausted epoch) the previous one:
  PRODUCER_FENCED; an epoch that is neither the current one nor the one before the last
  bump (a retry, answered without a second bump): PRODUCER_FENCED;
* PrepareCommit / PrepareAbort: CONCURRENT_TRANSACTIONS (the client retries);
* Ongoing: the transaction of the previous instance is aborted with a bumped epoch
  (:func:`fence_and_abort`) and the answer is CONCURRENT_TRANSACTIONS: the retry bumps
  again once the abort is complete;
* Empty / CompleteX: epoch + 1, or, when the epoch is exhausted, a new producer id at epoch
  0; the state becomes Empty with the requested timeout.
"""

from __future__ import annotations

from riverbed.coordinator.transactions.end_transaction import fence_and_abort
from riverbed.coordinator.transactions.transaction_api import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from riverbed.coordinator.transactions.transaction_context import TransactionContext, TxnReply
from riverbed.coordinator.transactions.transaction_errors import TransactionCoordinatorError
from riverbed.coordinator.transactions.transaction_metadata import (
    TransactionMetadata,
    is_epoch_exhausted,
)
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.protocol.error_codes import ErrorCode

E = ErrorCode
S = TransactionState


def init_producer_id(
    ctx: TransactionContext, req: InitProducerIdRequest, now_ms: int
) -> TxnReply[InitProducerIdResponse]:
    if req.transactional_id is None:
        return TxnReply(InitProducerIdResponse(E.NONE, ctx.new_producer_id(), 0))
    try:
        return _init(ctx, req, req.transactional_id, now_ms)
    except TransactionCoordinatorError as e:
        return TxnReply(InitProducerIdResponse(e.error_code))


def validate_timeout(ctx: TransactionContext, timeout_ms: int) -> None:
    """Kafka's ``validateTransactionTimeoutMs``: ``0 < timeout <= transaction.max.timeout.ms``."""
    if not 0 < timeout_ms <= ctx.config.transaction_max_timeout_ms:
        raise TransactionCoordinatorError(
            E.INVALID_TRANSACTION_TIMEOUT,
            f"transaction.timeout.ms {timeout_ms} is not in "
            f"(0, {ctx.config.transaction_max_timeout_ms}]",
        )


def _expected(req: InitProducerIdRequest) -> tuple[int, int] | None:
    """The producer's current (id, epoch), if it sent them (both or neither, as KafkaApis)."""
    if req.producer_id == NO_PRODUCER_ID and req.producer_epoch == NO_PRODUCER_EPOCH:
        return None
    if req.producer_id == NO_PRODUCER_ID or req.producer_epoch == NO_PRODUCER_EPOCH:
        raise TransactionCoordinatorError(E.INVALID_REQUEST)
    return req.producer_id, req.producer_epoch


def _init(
    ctx: TransactionContext, req: InitProducerIdRequest, transactional_id: str, now_ms: int
) -> TxnReply[InitProducerIdResponse]:
    if not transactional_id:
        raise TransactionCoordinatorError(E.INVALID_REQUEST)
    validate_timeout(ctx, req.transaction_timeout_ms)
    expected = _expected(req)
    meta = ctx.txns.get(transactional_id)
    if meta is None:
        # held only in memory until the Empty record below is appended
        meta = TransactionMetadata(
            transactional_id,
            ctx.new_producer_id(),
            NO_PRODUCER_EPOCH,
            req.transaction_timeout_ms,
            S.EMPTY,
            last_update_ms=now_ms,
        )
        ctx.txns[transactional_id] = meta
    if expected is not None and not _is_valid_producer_id(meta, *expected):
        raise TransactionCoordinatorError(E.PRODUCER_FENCED)
    if meta.state.is_prepare:
        raise TransactionCoordinatorError(E.CONCURRENT_TRANSACTIONS)
    if meta.state is S.ONGOING:
        records, markers = fence_and_abort(ctx, meta, now_ms)
        return TxnReply(InitProducerIdResponse(E.CONCURRENT_TRANSACTIONS), tuple(records), markers)
    expected_epoch = None if expected is None else expected[1]
    if meta.is_epoch_exhausted and expected_epoch in (None, meta.producer_epoch):
        # prepareProducerIdRotation
        meta.previous_producer_id = meta.producer_id
        meta.last_producer_epoch = NO_PRODUCER_EPOCH if expected is None else meta.producer_epoch
        meta.producer_id, meta.producer_epoch = ctx.new_producer_id(), 0
    else:
        _increment_epoch(meta, expected_epoch)
    meta.transition(S.EMPTY)
    meta.timeout_ms = req.transaction_timeout_ms
    meta.partitions = frozenset()
    meta.start_ms = -1
    meta.last_update_ms = now_ms
    return TxnReply(
        InitProducerIdResponse(E.NONE, meta.producer_id, meta.producer_epoch), (ctx.record(meta),)
    )


def _is_valid_producer_id(meta: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """Kafka's ``isValidProducerId``: a new id (epoch -1), the current producer id, or the
    previous one with an exhausted epoch (a retry of the rotation the client never saw)."""
    return (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == meta.producer_id
        or meta.is_next_handle(producer_id, epoch)  # waits (CONCURRENT_TRANSACTIONS)
        or (producer_id == meta.previous_producer_id and is_epoch_exhausted(epoch))
    )


def _increment_epoch(meta: TransactionMetadata, expected_epoch: int | None) -> None:
    """``prepareIncrementProducerEpoch``: bump, or -- a retry of the last bump -- keep."""
    if expected_epoch is None or meta.producer_epoch in (NO_PRODUCER_EPOCH, expected_epoch):
        if meta.is_epoch_exhausted:  # only with an expected epoch that is not the current
            raise TransactionCoordinatorError(E.PRODUCER_FENCED)
        meta.last_producer_epoch = (
            NO_PRODUCER_EPOCH if expected_epoch is None else meta.producer_epoch
        )
        meta.producer_epoch += 1
    elif expected_epoch != meta.last_producer_epoch:
        raise TransactionCoordinatorError(E.PRODUCER_FENCED)
