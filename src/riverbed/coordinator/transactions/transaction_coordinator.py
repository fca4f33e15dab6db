"""The transaction coordinator facade: every transaction API the broker calls, timers,
markers, and replay.

One :class:`TransactionCoordinator` serves every transactional id (a single-node broker
leads every ``__transaction_state`` partition).  Pure and synchronous: no I/O, no threads,
no clock reads -- time comes in as ``now_ms``, producer ids from ``new_producer_id`` (the
broker's ``ProducerIdManager.next_producer_id``).  How the broker drives it::

    reply = coordinator.end_txn(request, now_ms)    # TxnReply(response, records, markers)
    append(reply.records)                            # to partition_for(r.transactional_id,
                                                     #   transaction.state.log.num.partitions)
    send(reply.response)
    for m in reply.markers: write a COMMIT/ABORT control batch (m.producer_id,
        m.producer_epoch, m.coordinator_epoch) to each of m.partitions, then
        append(coordinator.markers_written(m.transactional_id, m.producer_id,
                                           m.producer_epoch, m.partitions, now_ms))

    # on a timer, at the latest at coordinator.next_deadline_ms():
    reply = coordinator.tick(now_ms); append(reply.records); write reply.markers as above

    # on start: for each (key, value) in __transaction_state, in log order:
    coordinator.replay(key, value); then reply = coordinator.recover(now_ms) and carry
    out reply.records and reply.markers as above

Crash behaviour: state is rebuilt only from appended records.  A crash before a
PrepareCommit/PrepareAbort record is durable loses the EndTxn (the producer was not
answered; the transaction is still Ongoing and times out or is retried); after it, the
decision stands: :meth:`recover` re-sends every marker of every PrepareX transaction
(markers are idempotent), and the transaction completes.  A crash between markers and
the CompleteX record does the same.  The broker answers AddPartitionsToTxn /
AddOffsetsToTxn once their Ongoing record is appended, not durable: a crash may lose it
while the partitions hold the producer's data, and :meth:`abort_unlisted` (after
:meth:`recover`) aborts such transactions.  Not thread-safe: call it from one thread or loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from riverbed.coordinator.partitioning import partition_for
from riverbed.coordinator.transactions import add_partitions as _add
from riverbed.coordinator.transactions import admin as _admin
from riverbed.coordinator.transactions import expiration as _expiration
from riverbed.coordinator.transactions.end_transaction import end_transaction
from riverbed.coordinator.transactions.init_producer_id import init_producer_id
from riverbed.coordinator.transactions.orphans import (
    OpenTransaction,
    OrphanReport,
    abort_unlisted,
)
from riverbed.coordinator.transactions.transaction_api import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResult,
    DescribedTransaction,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    MarkerRequest,
)
from riverbed.coordinator.transactions.transaction_config import TransactionCoordinatorConfig
from riverbed.coordinator.transactions.transaction_context import TransactionContext, TxnReply
from riverbed.coordinator.transactions.transaction_log import (
    TransactionRecord,
    decode_key,
    decode_value,
)
from riverbed.coordinator.transactions.transaction_metadata import TransactionMetadata
from riverbed.protocol.topic_partition import TopicPartition


class TransactionCoordinator:
    """Kafka transactions (KIP-98, KIP-447, KIP-890) of one broker."""

    def __init__(
        self, new_producer_id: Callable[[], int], config: TransactionCoordinatorConfig | None = None
    ) -> None:
        self.config = config or TransactionCoordinatorConfig()
        self._ctx = TransactionContext(self.config, new_producer_id)

    # -- producer APIs -------------------------------------------------------------------

    def init_producer_id(
        self, req: InitProducerIdRequest, now_ms: int
    ) -> TxnReply[InitProducerIdResponse]:
        return init_producer_id(self._ctx, req, now_ms)

    def add_partitions_to_txn(
        self, req: AddPartitionsToTxnRequest, now_ms: int
    ) -> TxnReply[AddPartitionsToTxnResult]:
        return _add.add_partitions(self._ctx, req, now_ms)

    def add_partitions_to_txn_batch(
        self, reqs: Iterable[AddPartitionsToTxnRequest], now_ms: int
    ) -> TxnReply[list[AddPartitionsToTxnResult]]:
        """AddPartitionsToTxn v4+: several transactions, one answer each."""
        results: list[AddPartitionsToTxnResult] = []
        records: list[TransactionRecord] = []
        for req in reqs:
            reply = _add.add_partitions(self._ctx, req, now_ms)
            results.append(reply.response)
            records += reply.records
        return TxnReply(results, tuple(records))

    def add_offsets_to_txn(
        self, req: AddOffsetsToTxnRequest, now_ms: int
    ) -> TxnReply[AddOffsetsToTxnResponse]:
        return _add.add_offsets(self._ctx, req, now_ms)

    def end_txn(self, req: EndTxnRequest, now_ms: int) -> TxnReply[EndTxnResponse]:
        return end_transaction(self._ctx, req, now_ms)

    # -- markers -------------------------------------------------------------------------

    def markers_written(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> tuple[TransactionRecord, ...]:
        """The broker wrote (durably) the markers of a :class:`MarkerRequest` in
        ``partitions`` (all of them, or some: report the rest later).  When none is left,
        the transaction completes: returns its CompleteCommit/CompleteAbort record.  A
        report for a transaction that has moved on (another producer id or epoch, or no
        longer PrepareX) is ignored: returns ()."""
        meta = self._ctx.txns.get(transactional_id)
        if (
            meta is None
            or not meta.state.is_prepare
            or meta.producer_id != producer_id
            or meta.producer_epoch != producer_epoch
        ):
            return ()
        left = self._ctx.awaiting.setdefault(transactional_id, set(meta.partitions))
        left.difference_update(partitions)
        if left:
            return ()
        self._ctx.complete(meta, now_ms)
        return (self._ctx.record(meta),)

    def outstanding_markers(self) -> list[MarkerRequest]:
        """Markers not yet reported written (to retry after a failed write), one request per
        transaction, naming only the partitions still missing."""
        out = []
        for transactional_id, left in sorted(self._ctx.awaiting.items()):
            meta = self._ctx.txns[transactional_id]
            request = self._ctx.marker_request(meta)
            out.append(
                MarkerRequest(
                    request.transactional_id,
                    request.producer_id,
                    request.producer_epoch,
                    request.result,
                    frozenset(left),
                    request.coordinator_epoch,
                    request.transaction_version,
                )
            )
        return out

    # -- administration ------------------------------------------------------------------

    def describe_transactions(self, transactional_ids: Iterable[str]) -> list[DescribedTransaction]:
        return _admin.describe(self._ctx, transactional_ids)

    def list_transactions(
        self, req: ListTransactionsRequest, now_ms: int
    ) -> ListTransactionsResponse:
        return _admin.list_transactions(self._ctx, req, now_ms)

    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition of ``transactional_id`` (FindCoordinator)."""
        return partition_for(transactional_id, self.config.transaction_state_log_num_partitions)

    # -- time ----------------------------------------------------------------------------

    def tick(self, now_ms: int) -> TxnReply[None]:
        """Abort timed-out transactions, expire idle transactional ids."""
        return _expiration.tick(self._ctx, now_ms)

    def next_deadline_ms(self) -> int | None:
        return _expiration.next_deadline_ms(self._ctx)

    # -- persistence ---------------------------------------------------------------------

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one ``__transaction_state`` record, in log order (load on start).  Raises
        :class:`~riverbed.errors.DecodeError` for a record that is not Kafka's format."""
        transactional_id = decode_key(key)
        self._ctx.awaiting.pop(transactional_id, None)
        if value is None:
            self._ctx.txns.pop(transactional_id, None)
        else:
            self._ctx.txns[transactional_id] = decode_value(transactional_id, value)

    def recover(self, now_ms: int) -> TxnReply[None]:
        """After the last :meth:`replay`: the markers of every transaction found in
        PrepareCommit/PrepareAbort, to write again (Kafka's ``loadTransactionsForTxnTopicPartition``
        re-sends them likewise), and CompleteX records for any without partitions."""
        records: list[TransactionRecord] = []
        markers: list[MarkerRequest] = []
        self._ctx.awaiting.clear()
        for _, meta in sorted(self._ctx.txns.items()):
            if meta.state.is_prepare:
                markers += self._ctx.start_markers(meta, records, now_ms)
        return TxnReply(None, tuple(records), tuple(markers))

    def abort_unlisted(
        self, open_txns: Iterable[OpenTransaction], now_ms: int
    ) -> TxnReply[OrphanReport]:
        """After :meth:`recover`: abort every transaction left open in a data partition
        that the coordinator does not list for that producer id and epoch (its Ongoing
        record was appended but not durable when the broker crashed).  See
        :mod:`.orphans` for the rule and the invariant it relies on."""
        return abort_unlisted(self._ctx, open_txns, now_ms)

    def snapshot(self) -> dict[str, tuple[object, ...]]:
        """What survives a restart, as plain values (replay tests compare these)."""
        return {t: meta.persisted() for t, meta in sorted(self._ctx.txns.items())}

    # -- introspection for tests and tools -----------------------------------------------

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        return self._ctx.txns.get(transactional_id)

    def transactional_ids(self) -> list[str]:
        return sorted(self._ctx.txns)
