"""Recovery: abort the open transactions in data partitions that the coordinator lost.

Why they exist.  The broker answers AddPartitionsToTxn / AddOffsetsToTxn (and the
implicit add of Produce v12+) once the Ongoing record is *appended* to
``__transaction_state``, not once it is durable; the flusher makes it durable with the
next group commit.  A kill -9 in that window can leave a data partition holding a
producer's transactional batches (they were durable: Produce acks=all waits for its own
fsync) while the replayed coordinator does not list that partition in the producer's
transaction, or has no Ongoing transaction at all.  No marker would ever close it: the
partition's last stable offset would stay stuck and read_committed readers would stall.

The invariant that makes this safe: ``__transaction_state`` partition logs are prefixes
after a crash (the flusher advances a log's flushed offset only once every earlier
segment and the active one are fsynced, and recovery truncates a torn tail at the first
bad batch), and a producer's records all go to one partition.  So a durable PrepareCommit
/ PrepareAbort implies every earlier Ongoing record of its transaction is durable: a
transaction whose EndTxn was answered never loses a partition.  Only transactions still
Ongoing (EndTxn not answered) can.

The rule (:func:`abort_unlisted`), after replay and :meth:`recover`, for each open
transaction ``(partition, producer id P, epoch E)`` found in the data partitions'
producer state (``__consumer_offsets`` included: TxnOffsetCommit's batches):

* the coordinator's transaction of P lists the partition and is Ongoing or PrepareX:
  nothing to do (the client goes on, ``recover``'s markers, or the timeout, close it);
* the coordinator's current handle is (P, E) and it is Ongoing without the partition, or
  Empty / CompleteCommit / CompleteAbort (the whole Ongoing record was lost): the
  partition is added back and the transaction is aborted with the epoch bumped, as a
  timed-out transaction is (:func:`fence_and_abort`: a PrepareAbort record, then ABORT
  markers in every partition, then CompleteAbort).  The producer's next EndTxn(commit)
  is refused -- PRODUCER_FENCED (transaction version 1), INVALID_TXN_STATE (version 2,
  whose producer may then abort and carry on) -- so it never commits part of what it
  sent; a new producer with the same ``transactional.id`` initializes as usual;
* anything else (a producer id the coordinator does not know, an older epoch): an ABORT
  marker is written directly (a :class:`MarkerRequest` with an empty transactional id:
  no coordinator record, nothing to complete), at the open transaction's epoch or the
  coordinator's newer one for that producer id.

The PrepareAbort record is durable before any marker is written (the broker's marker
path waits for it), so a crash during this recovery finds the abort decided, never a
closed partition beside a transaction that could still commit.

The opposite case -- the coordinator lists a partition Ongoing that holds no data -- needs
nothing: the client continues, or the transaction times out as usual.  Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from riverbed.coordinator.transactions.end_transaction import fence_and_abort
from riverbed.coordinator.transactions.transaction_api import MarkerRequest, TransactionResult
from riverbed.coordinator.transactions.transaction_context import TransactionContext, TxnReply
from riverbed.coordinator.transactions.transaction_log import TransactionRecord
from riverbed.coordinator.transactions.transaction_metadata import TransactionMetadata
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.protocol.topic_partition import TopicPartition

S = TransactionState
DIRECT = ""
"""The transactional id of a direct ABORT marker request (no coordinator transaction)."""


@dataclass(frozen=True, slots=True, order=True)
class OpenTransaction:
    """A producer's transaction left open in a data partition's producer state."""

    partition: TopicPartition
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class OrphanReport:
    """What :func:`abort_unlisted` decided: ids aborted (fenced), direct markers."""

    fenced: dict[str, frozenset[TopicPartition]]
    direct: tuple[OpenTransaction, ...]


def abort_unlisted(
    ctx: TransactionContext, open_txns: Iterable[OpenTransaction], now_ms: int
) -> TxnReply[OrphanReport]:
    """Abort every open transaction the coordinator does not list (module docstring)."""
    by_pid: dict[int, TransactionMetadata] = {m.producer_id: m for m in ctx.txns.values()}
    lost: dict[str, set[TopicPartition]] = {}
    direct: list[OpenTransaction] = []
    for txn in sorted(open_txns):
        meta = by_pid.get(txn.producer_id)
        if (
            meta is not None
            and txn.partition in meta.partitions
            and (meta.state.is_prepare or txn.producer_epoch == meta.producer_epoch)
        ):
            continue  # listed: Ongoing at this epoch, or PrepareX (its epoch may be bumped)
        if (
            meta is not None
            and txn.producer_epoch == meta.producer_epoch
            and (meta.state is S.ONGOING or meta.state.is_complete_or_empty)
        ):
            lost.setdefault(meta.transactional_id, set()).add(txn.partition)
        else:
            direct.append(txn)
    records: list[TransactionRecord] = []
    markers: list[MarkerRequest] = []
    for transactional_id, partitions in sorted(lost.items()):
        meta = ctx.txns[transactional_id]
        if meta.state.is_complete_or_empty:
            meta.start_ms = now_ms
        meta.transition(S.ONGOING)
        meta.partitions |= partitions
        more, new_markers = fence_and_abort(ctx, meta, now_ms)
        records += more
        markers += new_markers
    for txn in direct:
        meta = by_pid.get(txn.producer_id)
        epoch = txn.producer_epoch if meta is None else max(txn.producer_epoch, meta.producer_epoch)
        markers.append(
            MarkerRequest(
                DIRECT,
                txn.producer_id,
                epoch,
                TransactionResult.ABORT,
                frozenset((txn.partition,)),
                ctx.config.coordinator_epoch,
                ctx.config.transaction_version,
            )
        )
    report = OrphanReport({t: frozenset(p) for t, p in lost.items()}, tuple(direct))
    return TxnReply(report, tuple(records), tuple(markers))
