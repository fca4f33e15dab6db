"""EndTxn, and the aborts the coordinator starts itself (fencing a producer, timeouts).

Follows Kafka 4.x's ``TransactionCoordinator.endTransaction`` (transaction version 2) and
``endTransactionWithTV1``; which one applies is the *client's* transaction version
(``EndTxnRequest.transaction_version``: 2 for EndTxn v5+).  Error codes, in Kafka's order:

* empty transactional id: INVALID_REQUEST; unknown id or another producer id:
  INVALID_PRODUCER_ID_MAPPING;
* TV1: an epoch other than the current one: PRODUCER_FENCED.  TV2: the current epoch, or
  in PrepareX/CompleteX the epoch just before the bump (a retry), or the last epoch of the
  previous producer id after a rotation -- anything else: PRODUCER_FENCED;
* Ongoing: PrepareCommit/PrepareAbort (TV2: epoch + 1, and a new producer id when the
  epoch is exhausted); a retry of what is already complete: NONE with no record; the same
  result while its markers are being written: CONCURRENT_TRANSACTIONS; any other state /
  result pair: INVALID_TXN_STATE.  TV2, PrepareX: a request with the handle the producer
  continues with (the bumped epoch, or the next producer id at epoch 0) is the producer's
  *next* transaction ending before this one's markers are written: CONCURRENT_TRANSACTIONS
  (retriable), where Kafka 4.1 answers PRODUCER_FENCED.  TV2 only: Empty, CompleteCommit
  and CompleteAbort accept a (non-retry) abort -- an abort of nothing, with an epoch bump.

A transaction with no partitions (possible only as above, or after an AddPartitionsToTxn
naming none) needs no markers: its PrepareX and CompleteX records are returned together,
as Kafka's ``TransactionMarkerChannelManager.maybeWriteTxnCompletion`` completes it at once.
"""

from __future__ import annotations

from riverbed.coordinator.transactions.transaction_api import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    EndTxnRequest,
    EndTxnResponse,
    MarkerRequest,
    TransactionResult,
)
from riverbed.coordinator.transactions.transaction_config import TV_2
from riverbed.coordinator.transactions.transaction_context import TransactionContext, TxnReply
from riverbed.coordinator.transactions.transaction_errors import TransactionCoordinatorError
from riverbed.coordinator.transactions.transaction_log import TransactionRecord
from riverbed.coordinator.transactions.transaction_metadata import TransactionMetadata
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.protocol.error_codes import ErrorCode

E = ErrorCode
S = TransactionState
Outcome = tuple[list[TransactionRecord], tuple[MarkerRequest, ...]]


def end_transaction(
    ctx: TransactionContext, req: EndTxnRequest, now_ms: int
) -> TxnReply[EndTxnResponse]:
    """Handle EndTxn: commit or abort the producer's transaction."""
    try:
        if not req.transactional_id:
            raise TransactionCoordinatorError(E.INVALID_REQUEST)
        meta = ctx.txns.get(req.transactional_id)
        if meta is None:
            raise TransactionCoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
        result = TransactionResult.COMMIT if req.committed else TransactionResult.ABORT
        if req.transaction_version >= TV_2:
            return _end_tv2(ctx, meta, req, result, now_ms)
        return _end_tv1(ctx, meta, req, result, now_ms)
    except TransactionCoordinatorError as e:
        return TxnReply(EndTxnResponse(e.error_code))


def _end_tv1(
    ctx: TransactionContext,
    meta: TransactionMetadata,
    req: EndTxnRequest,
    result: TransactionResult,
    now_ms: int,
) -> TxnReply[EndTxnResponse]:
    if meta.producer_id != req.producer_id:
        raise TransactionCoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
    if req.producer_epoch != meta.producer_epoch:
        raise TransactionCoordinatorError(E.PRODUCER_FENCED)
    if meta.state is S.ONGOING:
        records, markers = _prepare(
            ctx, meta, _prepare_state(result), req.transaction_version, now_ms, bump=False
        )
        return TxnReply(EndTxnResponse(E.NONE), tuple(records), markers)
    _already(meta, result, is_retry=True)
    return TxnReply(EndTxnResponse(E.NONE))


def _end_tv2(
    ctx: TransactionContext,
    meta: TransactionMetadata,
    req: EndTxnRequest,
    result: TransactionResult,
    now_ms: int,
) -> TxnReply[EndTxnResponse]:
    retry_on_overflow = (
        meta.previous_producer_id == req.producer_id
        and req.producer_epoch == MAX_PRODUCER_EPOCH - 1
        and meta.producer_epoch == 0
    )
    retry_on_bump = meta.producer_epoch == req.producer_epoch + 1
    if meta.state in (S.ONGOING, S.EMPTY):
        valid_epoch = req.producer_epoch == meta.producer_epoch
    elif meta.state.is_prepare:
        valid_epoch = retry_on_bump
    else:
        valid_epoch = (
            retry_on_bump or retry_on_overflow or req.producer_epoch == meta.producer_epoch
        )
    if meta.is_next_handle(req.producer_id, req.producer_epoch):
        # The producer's next transaction ends before this one's markers are written
        # (EndTxn v5 answered with the new epoch already): it waits, as AddPartitionsToTxn
        # does.  Kafka 4.1 fences it (PRODUCER_FENCED) -- a race its marker latency makes
        # rare and ours does not (franz-go's TestTxnEtl aborts right after a commit).
        raise TransactionCoordinatorError(E.CONCURRENT_TRANSACTIONS)
    if meta.producer_id != req.producer_id and not retry_on_overflow:
        raise TransactionCoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
    if not valid_epoch:
        raise TransactionCoordinatorError(E.PRODUCER_FENCED)
    is_retry = retry_on_bump or retry_on_overflow
    if meta.state is S.ONGOING:
        records, markers = _prepare(ctx, meta, _prepare_state(result), TV_2, now_ms, bump=True)
    elif meta.state.is_complete_or_empty and result is TransactionResult.ABORT and not is_retry:
        # KIP-890: a client unsure of the state may always abort (nothing to abort here)
        records, markers = _prepare(
            ctx, meta, S.PREPARE_ABORT, TV_2, now_ms, bump=True, no_partition_added=True
        )
    else:
        _already(meta, result, is_retry)
        return TxnReply(EndTxnResponse(E.NONE, meta.producer_id, meta.producer_epoch))
    producer_id, epoch = _next_handle(meta)
    return TxnReply(EndTxnResponse(E.NONE, producer_id, epoch), tuple(records), markers)


def _already(meta: TransactionMetadata, result: TransactionResult, is_retry: bool) -> None:
    """The request asks for what is done or under way: return (NONE) if it is a retry of a
    completed end, else raise CONCURRENT_TRANSACTIONS or INVALID_TXN_STATE."""
    done = S.COMPLETE_COMMIT if result is TransactionResult.COMMIT else S.COMPLETE_ABORT
    doing = _prepare_state(result)
    if meta.state is done and is_retry:
        return
    if meta.state is doing:
        raise TransactionCoordinatorError(E.CONCURRENT_TRANSACTIONS)
    raise TransactionCoordinatorError(
        E.INVALID_TXN_STATE,
        f"{meta.transactional_id} is {meta.state.wire_name}, asked to {result.name.lower()}",
    )


def _prepare_state(result: TransactionResult) -> TransactionState:
    return S.PREPARE_COMMIT if result is TransactionResult.COMMIT else S.PREPARE_ABORT


def _next_handle(meta: TransactionMetadata) -> tuple[int, int]:
    """The producer id and epoch the client continues with (EndTxn v5): after a rotation,
    the new producer id at epoch 0 -- the client never sees ``MAX_PRODUCER_EPOCH``."""
    if meta.next_producer_id != -1:
        return meta.next_producer_id, 0
    return meta.producer_id, meta.producer_epoch


def _prepare(
    ctx: TransactionContext,
    meta: TransactionMetadata,
    target: TransactionState,
    client_tv: int,
    now_ms: int,
    *,
    bump: bool,
    no_partition_added: bool = False,
    rotate: bool | None = None,
) -> Outcome:
    """Kafka's ``prepareAbortOrCommit``: move to ``target`` (bumping the epoch for TV2) and
    return the PrepareX record plus the markers (or the CompleteX record, if none)."""
    meta.transition(target)
    if bump:
        if rotate if rotate is not None else meta.is_epoch_exhausted:
            meta.next_producer_id = ctx.new_producer_id()
        meta.last_producer_epoch = meta.producer_epoch
        meta.producer_epoch = min(meta.producer_epoch + 1, MAX_PRODUCER_EPOCH)
    if no_partition_added:
        meta.start_ms = now_ms
    meta.client_transaction_version = client_tv
    meta.last_update_ms = now_ms
    records = [ctx.record(meta)]
    return records, ctx.start_markers(meta, records, now_ms)


def fence_and_abort(ctx: TransactionContext, meta: TransactionMetadata, now_ms: int) -> Outcome:
    """Abort ``meta``'s Ongoing transaction with the epoch bumped once, fencing its producer
    (InitProducerId from a new instance, or the transaction timed out).

    Through PrepareEpochFence (in memory) to PrepareAbort at the *cluster's* transaction
    version, as Kafka's ``prepareFenceProducerEpoch`` + ``endTransaction(isFromClient =
    false)``.  Kafka 4.1.1 bumps once at either version -- checked against its
    ``__transaction_state`` in ``test_txn_kafka_reference.py``: TV1 bumps in the fence,
    TV2 in the abort.  Under TV2 the producer whose transaction timed out may then abort
    with its old epoch (a retry of the bump) and carry on with the new one (KIP-890); any
    other request of its old epoch is PRODUCER_FENCED."""
    tv = ctx.config.transaction_version
    meta.transition(S.PREPARE_EPOCH_FENCE)
    meta.last_producer_epoch = NO_PRODUCER_EPOCH
    if tv >= TV_2:
        return _prepare(ctx, meta, S.PREPARE_ABORT, tv, now_ms, bump=True, rotate=False)
    meta.producer_epoch = min(meta.producer_epoch + 1, MAX_PRODUCER_EPOCH)
    return _prepare(ctx, meta, S.PREPARE_ABORT, tv, now_ms, bump=False)
