"""Transaction states.  The enum lists each state's allowed next states: the enum is the spec.

Kafka's ``TransactionState`` (``TransactionMetadata.scala`` / ``TransactionState.java``)
states each state's *previous* states; this is the same table read forwards.  The ids are
the ``TransactionStatus`` byte of a ``__transaction_state`` value, the names are what
DescribeTransactions and ListTransactions show::

    ┌──────── InitProducerId (epoch bump), from Empty / Complete* ────────┐
    ▼                                                                      │
  Empty ─AddPartitions─▶ Ongoing ─EndTxn(commit)─▶ PrepareCommit ─markers─▶ CompleteCommit
                          │ │ ▲
                          │ │ └─ AddPartitions (more partitions)
                          │ └─EndTxn(abort)─────▶ PrepareAbort ─markers─▶ CompleteAbort
                          │                          ▲
                          └─InitProducerId/timeout─▶ PrepareEpochFence

    CompleteCommit, CompleteAbort ──AddPartitions──▶ Ongoing       (the next transaction)
    Empty, CompleteCommit, CompleteAbort ──transactional.id expired──▶ Dead

Transaction version 2 (KIP-890) adds ``Empty/CompleteCommit/CompleteAbort -> PrepareAbort``:
a client unsure of the server's state may always abort.  ``PrepareEpochFence`` is never
written to the log: it is the in-memory step in which the coordinator bumps the epoch to
fence a producer before aborting its transaction.  ``Dead`` is never written either: the
transactional id's tombstone is.
"""

from __future__ import annotations

from enum import Enum

from riverbed.coordinator.errors import IllegalStateTransitionError


class TransactionState(Enum):
    """``value`` is ``(TransactionStatus id, wire name, names of allowed next states)``."""

    #                    id  wire name             allowed next states
    EMPTY = (0, "Empty", ("Empty", "Ongoing", "PrepareAbort", "Dead"))
    ONGOING = (1, "Ongoing", ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"))
    PREPARE_COMMIT = (2, "PrepareCommit", ("CompleteCommit",))
    PREPARE_ABORT = (3, "PrepareAbort", ("CompleteAbort",))
    COMPLETE_COMMIT = (4, "CompleteCommit", ("Empty", "Ongoing", "PrepareAbort", "Dead"))
    COMPLETE_ABORT = (5, "CompleteAbort", ("Empty", "Ongoing", "PrepareAbort", "Dead"))
    DEAD = (6, "Dead", ())
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence", ("PrepareAbort",))

    def __init__(self, state_id: int, wire_name: str, next_states: tuple[str, ...]) -> None:
        self.id = state_id
        self.wire_name = wire_name
        self._next_names = next_states

    @property
    def next_states(self) -> frozenset[TransactionState]:
        """States this one may move to."""
        return frozenset(s for s in TransactionState if s.wire_name in self._next_names)

    def check_transition(self, target: TransactionState) -> None:
        """Raise :class:`IllegalStateTransitionError` unless ``self -> target`` is allowed."""
        if target.wire_name not in self._next_names:
            raise IllegalStateTransitionError(f"{self.wire_name} -> {target.wire_name}")

    @property
    def is_prepare(self) -> bool:
        """Markers are being written (PrepareCommit, PrepareAbort)."""
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

    @property
    def is_complete_or_empty(self) -> bool:
        """No transaction in progress: a new one may start, the id may expire."""
        return self in (
            TransactionState.EMPTY,
            TransactionState.COMPLETE_COMMIT,
            TransactionState.COMPLETE_ABORT,
        )

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        for state in cls:
            if state.id == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_wire(cls, name: str) -> TransactionState | None:
        """The state named ``name`` exactly (Kafka's ``TransactionState.fromName``), or None."""
        for state in cls:
            if state.wire_name == name:
                return state
        return None
