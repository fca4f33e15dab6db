"""One transactional id's state: Kafka's ``TransactionMetadata``, without the locks.

The fields are those of a ``__transaction_state`` value (:mod:`.transaction_log`), plus
``last_producer_epoch``, which Kafka keeps in memory only (a restart resets it to -1, so an
InitProducerId *retry* that spans a restart is refused as Kafka refuses it).  Invariants
the coordinator keeps (checked by its tests):

* ``partitions`` is empty in Empty, CompleteCommit and CompleteAbort;
* ``start_ms`` is -1 in Empty (no transaction since the last InitProducerId);
* ``producer_epoch`` never decreases for a given ``producer_id``; it is at most
  ``MAX_PRODUCER_EPOCH`` and is -1 only before the first InitProducerId completes;
* ``next_producer_id`` is set only in PrepareCommit / PrepareAbort of a transaction-version-2
  transaction that exhausted the epochs: completing it moves to that producer id, epoch 0.

Mutable; owned by one :class:`~riverbed.coordinator.transactions.TransactionCoordinator`.
Not thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from riverbed.coordinator.transactions.transaction_api import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
)
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.protocol.topic_partition import TopicPartition


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: ``Short.MaxValue - 1`` and above are
    never handed out, so the coordinator can always bump once more to fence."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    """When the transaction started (first partition added); -1 in Empty."""
    last_update_ms: int = -1
    """The last state change; the id expires ``transactional.id.expiration.ms`` after it."""
    previous_producer_id: int = NO_PRODUCER_ID
    """The producer id before the last rotation (epoch exhaustion), -1 if never rotated."""
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    """The epoch before the last InitProducerId / transaction-version-2 bump (not stored)."""

    def transition(self, target: TransactionState) -> None:
        """Move to ``target``; :class:`IllegalStateTransitionError` if the enum forbids it."""
        self.state.check_transition(target)
        self.state = target

    @property
    def is_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def is_next_handle(self, producer_id: int, producer_epoch: int) -> bool:
        """In PrepareCommit/PrepareAbort: is ``producer_id``/``producer_epoch`` the handle the
        producer continues with once the markers are written -- the current (for
        transaction version 2 already bumped) id and epoch, or, during a producer-id
        rotation, the next id at epoch 0?  A request carrying it comes from the owner of
        the transaction, which started its next one before the markers of this one were
        written: it must wait (CONCURRENT_TRANSACTIONS), not be fenced."""
        if not self.state.is_prepare:
            return False
        if self.next_producer_id != NO_PRODUCER_ID:
            return (producer_id, producer_epoch) == (self.next_producer_id, 0)
        return (producer_id, producer_epoch) == (self.producer_id, self.producer_epoch)

    def persisted(self) -> tuple[object, ...]:
        """What a ``__transaction_state`` value stores (replay reproduces exactly this)."""
        return (
            self.producer_id,
            self.producer_epoch,
            self.timeout_ms,
            self.state,
            tuple(sorted(self.partitions)),
            self.start_ms,
            self.last_update_ms,
            self.previous_producer_id,
            self.next_producer_id,
            self.client_transaction_version,
        )
