"""Group and member states.  Each enum lists its allowed transitions: the enum is the spec.

Classic groups (JoinGroup/SyncGroup protocol), as Kafka's ``ClassicGroupState``::

    Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
      ▲                  │    ▲                                                  │      │
      │   last member    │    │ join/leave/timeout                 leader's sync │      │
      └──── left ────────┘    └───────────────────────── Stable ◀────────────────┘      │
                              ▲                                                          │
                              └──────────────── member change ───────────────────────────┘
    any state ──delete / offsets expired / unload──▶ Dead

KIP-848 consumer groups have no transitions of their own: their state is *derived*
from the epochs (Kafka's ``ConsumerGroup.State``), so :class:`ConsumerGroupState`
carries only the wire names.  Their members do move, as Kafka's ``MemberState``, and
:class:`MemberState` lists those transitions.
"""

from __future__ import annotations

from enum import Enum

from riverbed.coordinator.errors import IllegalStateTransitionError


class ClassicGroupState(Enum):
    """State of a classic group; ``value`` is ``(wire name, names of allowed next states)``."""

    #                      wire name              allowed next states
    EMPTY = ("Empty", ("PreparingRebalance", "Dead"))
    PREPARING_REBALANCE = ("PreparingRebalance", ("CompletingRebalance", "Empty", "Dead"))
    COMPLETING_REBALANCE = ("CompletingRebalance", ("Stable", "PreparingRebalance", "Dead"))
    STABLE = ("Stable", ("PreparingRebalance", "Dead"))
    DEAD = ("Dead", ("Dead",))

    def __init__(self, wire_name: str, next_states: tuple[str, ...]) -> None:
        self.wire_name = wire_name
        self._next_names = next_states

    @property
    def next_states(self) -> frozenset[ClassicGroupState]:
        """States this one may move to."""
        return frozenset(s for s in ClassicGroupState if s.wire_name in self._next_names)

    def check_transition(self, target: ClassicGroupState) -> None:
        """Raise :class:`IllegalStateTransitionError` unless ``self -> target`` is allowed."""
        if target.wire_name not in self._next_names:
            raise IllegalStateTransitionError(f"{self.wire_name} -> {target.wire_name}")

    @classmethod
    def from_wire(cls, name: str) -> ClassicGroupState:
        for state in cls:
            if state.wire_name.lower() == name.lower():
                return state
        raise ValueError(f"unknown classic group state {name!r}")


class ConsumerGroupState(Enum):
    """State of a KIP-848 consumer group, derived from its epochs (see ``ConsumerGroup.state``).

    Empty: no members.  Assigning: group epoch > target assignment epoch (a new target is
    due).  Reconciling: some member's epoch differs from the assignment epoch.  Stable:
    every member is at the assignment epoch.  Dead: deleted.
    """

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(Enum):
    """A KIP-848 member's reconciliation state, as Kafka's ``MemberState``.

    ``value`` is ``(name, names of allowed next states)``.  STABLE: the member owns its
    share of the target at the target epoch.  UNREVOKED_PARTITIONS: it must first give up
    ``partitions_pending_revocation`` (kept at its old epoch).  UNRELEASED_PARTITIONS: it
    is at the target epoch but waits for partitions another member still holds.
    """

    STABLE = ("STABLE", ("STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"))
    UNREVOKED_PARTITIONS = (
        "UNREVOKED_PARTITIONS",
        ("STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"),
    )
    UNRELEASED_PARTITIONS = (
        "UNRELEASED_PARTITIONS",
        ("STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"),
    )

    def __init__(self, wire_name: str, next_states: tuple[str, ...]) -> None:
        self.wire_name = wire_name
        self._next_names = next_states

    def check_transition(self, target: MemberState) -> None:
        if target.wire_name not in self._next_names:
            raise IllegalStateTransitionError(f"{self.wire_name} -> {target.wire_name}")
