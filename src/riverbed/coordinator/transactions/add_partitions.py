"""AddPartitionsToTxn (v0-3 from clients, v4+ batched and ``verify_only`` from partition
leaders) and AddOffsetsToTxn.

Follows Kafka's ``handleAddPartitionsToTransaction`` / ``handleVerifyPartitionsInTransaction``:
empty transactional id: INVALID_REQUEST; unknown id or another producer id:
INVALID_PRODUCER_ID_MAPPING; another epoch: PRODUCER_FENCED; PrepareCommit/PrepareAbort:
CONCURRENT_TRANSACTIONS; partitions already in an Ongoing transaction: NONE with no record;
otherwise the transaction becomes (or stays) Ongoing with the union of the partitions, its
start time set when it leaves Empty/CompleteX.  ``verify_only`` changes nothing and answers,
per partition, NONE if it is in the transaction and TRANSACTION_ABORTABLE if not (KIP-890
part 1).  AddOffsetsToTxn adds the ``__consumer_offsets`` partition of the group
(``partition_for(group_id, offsets.topic.num.partitions)``), whose COMMIT marker later
makes the transaction's TxnOffsetCommit offsets visible.  Whether a topic exists or may be
written is the broker adapter's check, before it calls in (Kafka's ``KafkaApis`` does it).
"""

from __future__ import annotations

from collections.abc import Iterable

from riverbed.coordinator.partitioning import OFFSETS_TOPIC_NAME, partition_for
from riverbed.coordinator.transactions.transaction_api import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResult,
)
from riverbed.coordinator.transactions.transaction_context import TransactionContext, TxnReply
from riverbed.coordinator.transactions.transaction_errors import TransactionCoordinatorError
from riverbed.coordinator.transactions.transaction_log import TransactionRecord
from riverbed.coordinator.transactions.transaction_metadata import TransactionMetadata
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.topic_partition import TopicPartition

E = ErrorCode
S = TransactionState


def add_partitions(
    ctx: TransactionContext, req: AddPartitionsToTxnRequest, now_ms: int
) -> TxnReply[AddPartitionsToTxnResult]:
    if req.verify_only:
        return TxnReply(AddPartitionsToTxnResult(req.transactional_id, _verify(ctx, req)))
    records: tuple[TransactionRecord, ...] = ()
    try:
        records = _add(
            ctx,
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            req.partitions,
            req.transaction_version,
            now_ms,
        )
        code = E.NONE
    except TransactionCoordinatorError as e:
        code = e.error_code
    return TxnReply(
        AddPartitionsToTxnResult(req.transactional_id, dict.fromkeys(req.partitions, code)), records
    )


def add_offsets(
    ctx: TransactionContext, req: AddOffsetsToTxnRequest, now_ms: int
) -> TxnReply[AddOffsetsToTxnResponse]:
    tp = TopicPartition(
        OFFSETS_TOPIC_NAME, partition_for(req.group_id, ctx.config.offsets_topic_num_partitions)
    )
    try:
        records = _add(
            ctx,
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            frozenset((tp,)),
            None,
            now_ms,
        )
    except TransactionCoordinatorError as e:
        return TxnReply(AddOffsetsToTxnResponse(e.error_code))
    return TxnReply(AddOffsetsToTxnResponse(E.NONE), records)


def _current(
    ctx: TransactionContext, transactional_id: str, producer_id: int, producer_epoch: int
) -> TransactionMetadata:
    """The id's metadata if this producer id and epoch are its current ones, else raise."""
    if not transactional_id:
        raise TransactionCoordinatorError(E.INVALID_REQUEST)
    meta = ctx.txns.get(transactional_id)
    if meta is not None and meta.is_next_handle(producer_id, producer_epoch):
        # the producer's next transaction, before this one's markers are written
        raise TransactionCoordinatorError(E.CONCURRENT_TRANSACTIONS)
    if meta is None or meta.producer_id != producer_id:
        raise TransactionCoordinatorError(E.INVALID_PRODUCER_ID_MAPPING)
    if meta.producer_epoch != producer_epoch:
        raise TransactionCoordinatorError(E.PRODUCER_FENCED)
    if meta.state.is_prepare:
        raise TransactionCoordinatorError(E.CONCURRENT_TRANSACTIONS)
    return meta


def _add(
    ctx: TransactionContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartition],
    client_tv: int | None,
    now_ms: int,
) -> tuple[TransactionRecord, ...]:
    meta = _current(ctx, transactional_id, producer_id, producer_epoch)
    added = frozenset(partitions)
    if meta.state is S.ONGOING and added <= meta.partitions:
        return ()
    if meta.state.is_complete_or_empty:
        meta.start_ms = now_ms
    meta.transition(S.ONGOING)
    meta.partitions |= added
    meta.last_update_ms = now_ms
    if client_tv is not None:
        meta.client_transaction_version = client_tv
    return (ctx.record(meta),)


def _verify(
    ctx: TransactionContext, req: AddPartitionsToTxnRequest
) -> dict[TopicPartition, ErrorCode]:
    try:
        meta = _current(ctx, req.transactional_id, req.producer_id, req.producer_epoch)
    except TransactionCoordinatorError as e:
        return dict.fromkeys(req.partitions, e.error_code)
    return {
        tp: E.NONE if tp in meta.partitions else E.TRANSACTION_ABORTABLE for tp in req.partitions
    }
