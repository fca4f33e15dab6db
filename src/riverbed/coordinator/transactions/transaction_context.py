"""What the transaction coordinator's parts share: the metadata map, the outstanding markers,
the producer-id source, config; and :class:`TxnReply`, every handler's answer.

How answers flow (the design every handler follows, as the group coordinator's):

* A handler takes a request value and ``now_ms`` and returns a :class:`TxnReply`: the
  response, the ``__transaction_state`` records to append, and the :class:`MarkerRequest`
  values the broker must carry out afterwards.  No handler waits (there is no Pending):
  Kafka answers EndTxn once PrepareCommit/PrepareAbort is durable, before the markers.
* The broker, after *every* call: (1) appends ``records`` to the partition of each
  record's transactional id and waits for the append, (2) sends the response, (3) writes
  each marker request's control batches, then reports them with ``markers_written``
  (whose records it appends the same way).

State is applied in memory before the append, as Kafka's coordinator applies it once the
append succeeds; if an append fails the broker must rebuild the coordinator by replaying
``__transaction_state`` (it holds no partial state worth keeping) and call ``recover``.
Not thread-safe: one caller (the broker's event loop).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from riverbed.coordinator.transactions.transaction_api import MarkerRequest, TransactionResult
from riverbed.coordinator.transactions.transaction_config import TransactionCoordinatorConfig
from riverbed.coordinator.transactions.transaction_log import (
    TransactionRecord,
    metadata_record,
    value_version_for,
)
from riverbed.coordinator.transactions.transaction_metadata import TransactionMetadata
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.protocol.topic_partition import TopicPartition

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class TxnReply(Generic[R]):
    """A handler's answer: ``response``, records to append first, markers to write after."""

    response: R
    records: tuple[TransactionRecord, ...] = ()
    markers: tuple[MarkerRequest, ...] = ()


class TransactionContext:
    """Shared mutable state of one transaction coordinator.  Not thread-safe."""

    def __init__(
        self, config: TransactionCoordinatorConfig, new_producer_id: Callable[[], int]
    ) -> None:
        self.config = config
        self.new_producer_id = new_producer_id
        self.txns: dict[str, TransactionMetadata] = {}
        self.awaiting: dict[str, set[TopicPartition]] = {}
        """Partitions whose marker is not yet reported written, per transaction in
        PrepareCommit/PrepareAbort (in memory: a restart re-sends every marker)."""

    def record(self, meta: TransactionMetadata) -> TransactionRecord:
        """The record persisting ``meta`` as it is now."""
        return metadata_record(meta, value_version_for(self.config.transaction_version))

    def start_markers(
        self, meta: TransactionMetadata, records: list[TransactionRecord], now_ms: int
    ) -> tuple[MarkerRequest, ...]:
        """``meta`` just entered PrepareCommit/PrepareAbort: the markers to write, or -- no
        partitions (Kafka's ``maybeWriteTxnCompletion``) -- complete it at once."""
        if not meta.partitions:
            self.complete(meta, now_ms)
            records.append(self.record(meta))
            return ()
        self.awaiting[meta.transactional_id] = set(meta.partitions)
        return (self.marker_request(meta),)

    def marker_request(self, meta: TransactionMetadata) -> MarkerRequest:
        result = (
            TransactionResult.COMMIT
            if meta.state is TransactionState.PREPARE_COMMIT
            else TransactionResult.ABORT
        )
        return MarkerRequest(
            meta.transactional_id,
            meta.producer_id,
            meta.producer_epoch,
            result,
            meta.partitions,
            self.config.coordinator_epoch,
            meta.client_transaction_version,
        )

    def complete(self, meta: TransactionMetadata, now_ms: int) -> None:
        """Every marker is written: PrepareX -> CompleteX (Kafka's ``prepareComplete``).
        A pending producer-id rotation (transaction version 2) takes effect here."""
        target = (
            TransactionState.COMPLETE_COMMIT
            if meta.state is TransactionState.PREPARE_COMMIT
            else TransactionState.COMPLETE_ABORT
        )
        meta.transition(target)
        if meta.next_producer_id != -1:
            meta.previous_producer_id = meta.producer_id
            meta.producer_id, meta.producer_epoch = meta.next_producer_id, 0
            meta.next_producer_id = -1
        meta.partitions = frozenset()
        meta.last_update_ms = now_ms
        self.awaiting.pop(meta.transactional_id, None)
