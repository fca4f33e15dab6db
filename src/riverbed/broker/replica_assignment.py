"""Explicit replica assignments (CreateTopics, CreatePartitions) on a single node.

A client may name, per partition, the brokers that hold it.  With one node the only
assignment that can be honoured names this node alone, and it means what leaving the
choice to the broker means; anything else is refused as Kafka's controller refuses it
(``ReplicationControlManager``), with INVALID_REPLICA_ASSIGNMENT:

* an empty replica list, a broker named twice, an unknown broker id (every id but ours);
* for CreateTopics, partition indexes other than ``0..n-1`` each once;
* for CreatePartitions, a number of assignments other than the number of new partitions.

CreateTopics with assignments must leave ``num_partitions`` and ``replication_factor`` at
-1 (INVALID_REQUEST otherwise, as Kafka).  Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence

from riverbed.errors import InvalidReplicaAssignmentError

__all__ = ["check_new_partitions", "check_replicas", "partitions_of_assignment"]


def check_replicas(node_id: int, broker_ids: Sequence[int]) -> None:
    """Refuse one partition's replica list unless it is ``[node_id]``."""
    if not broker_ids:
        raise InvalidReplicaAssignmentError(
            "The manual partition assignment includes an empty replica list."
        )
    seen: set[int] = set()
    for broker in broker_ids:
        if broker in seen:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes the broker {broker} more than once."
            )
        seen.add(broker)
        if broker != node_id:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker {broker}, but no such "
                "broker is registered."
            )


def partitions_of_assignment(
    node_id: int, indexes_and_replicas: Sequence[tuple[int, Sequence[int]]]
) -> int:
    """The partition count a CreateTopics assignment asks for, once checked."""
    count = len(indexes_and_replicas)
    indexes = sorted(index for index, _replicas in indexes_and_replicas)
    if indexes != list(range(count)):
        raise InvalidReplicaAssignmentError(
            f"Partitions should be numbered 0 to {count - 1} once each, got {indexes}."
        )
    for _index, replicas in indexes_and_replicas:
        check_replicas(node_id, replicas)
    return count


def check_new_partitions(
    node_id: int, additional: int, assignments: Sequence[Sequence[int]]
) -> None:
    """Refuse a CreatePartitions assignment that does not name each new partition."""
    if len(assignments) != additional:
        raise InvalidReplicaAssignmentError(
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified."
        )
    for replicas in assignments:
        check_replicas(node_id, replicas)
