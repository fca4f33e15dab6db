"""Time-driven work: transaction timeouts and transactional-id expiration.

* A transaction Ongoing for longer than its ``transaction.timeout.ms``
  (``start_ms + timeout_ms < now``, Kafka's ``timedOutTransactions``) is aborted with a
  bumped epoch, fencing its producer (:func:`fence_and_abort`, as Kafka's
  ``abortTimedOutTransactions``); under transaction version 2 the producer may recover by
  aborting (its EndTxn is taken as a retry and answered with the new epoch).
* An id in Empty, CompleteCommit or CompleteAbort not updated for
  ``transactional.id.expiration.ms`` (``last_update_ms <= now - expiration``) passes
  through Dead and is forgotten: a tombstone is written (Kafka's
  ``enableTransactionalIdExpiration``).

Kafka runs both on fixed intervals (10 s and 1 h by default); we act at the exact deadline
(:func:`next_deadline_ms`), so we abort and expire no later than Kafka, and possibly sooner.
"""

from __future__ import annotations

from riverbed.coordinator.transactions.end_transaction import fence_and_abort
from riverbed.coordinator.transactions.transaction_api import MarkerRequest
from riverbed.coordinator.transactions.transaction_context import TransactionContext, TxnReply
from riverbed.coordinator.transactions.transaction_log import TransactionRecord, tombstone
from riverbed.coordinator.transactions.transaction_state import TransactionState


def tick(ctx: TransactionContext, now_ms: int) -> TxnReply[None]:
    records: list[TransactionRecord] = []
    markers: list[MarkerRequest] = []
    expiration_ms = ctx.config.transactional_id_expiration_ms
    for transactional_id in sorted(ctx.txns):
        meta = ctx.txns[transactional_id]
        if meta.state is TransactionState.ONGOING and meta.start_ms + meta.timeout_ms < now_ms:
            more, new_markers = fence_and_abort(ctx, meta, now_ms)
            records += more
            markers += new_markers
        elif meta.state.is_complete_or_empty and meta.last_update_ms <= now_ms - expiration_ms:
            meta.transition(TransactionState.DEAD)
            del ctx.txns[transactional_id]
            records.append(tombstone(transactional_id))
    return TxnReply(None, tuple(records), tuple(markers))


def next_deadline_ms(ctx: TransactionContext) -> int | None:
    """The earliest time :func:`tick` has something to do, or None."""
    deadlines = []
    for meta in ctx.txns.values():
        if meta.state is TransactionState.ONGOING:
            deadlines.append(meta.start_ms + meta.timeout_ms + 1)
        elif meta.state.is_complete_or_empty:
            deadlines.append(meta.last_update_ms + ctx.config.transactional_id_expiration_ms)
    return min(deadlines, default=None)
