"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46) on one node.

A single node has nothing to move, so no reassignment is ever in progress; the answers
are those of Kafka 4.4's controller (``ReplicationControlManager``) on a one-broker
cluster, per partition of the request, in request order:

* an unknown topic or partition index: UNKNOWN_TOPIC_OR_PARTITION;
* ``replicas`` null (cancel): NO_REASSIGNMENT_IN_PROGRESS;
* ``replicas`` ``[node_id]``: NONE, a no-op (it is the current assignment);
* any other list (empty, a broker twice, an unknown broker): INVALID_REPLICA_ASSIGNMENT
  with the controller's message (:func:`~riverbed.broker.replica_assignment.check_replicas`).

``timeout_ms`` is honoured trivially: the answer is immediate.  v1's
``allow_replication_factor_change`` is echoed; it cannot matter, as the only accepted
list keeps the replication factor at 1.  ListPartitionReassignments answers an empty
list, for all partitions or for named ones (unknown names are skipped, as Kafka).
Authorization (cluster ALTER / DESCRIBE) is applied by
:mod:`~riverbed.broker.handlers.authorization`.  Pure lookups on the event loop.
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import ReassignmentDeps
from riverbed.broker.replica_assignment import check_replicas
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)

ALTER_KEY = 45
LIST_KEY = 46

Alter = AlterPartitionReassignmentsResponse
NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."


def handle_alter(
    deps: ReassignmentDeps, ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    responses = []
    for topic in request.topics:
        found = deps.topics.get(topic.name)
        count = None if found is None else found.partitions
        partitions = []
        for partition in topic.partitions:
            code, message = _alter_one(deps.node_id, topic.name, count, partition)
            partitions.append(
                Alter.ReassignablePartitionResponse(
                    partition_index=partition.partition_index,
                    error_code=code,
                    error_message=message,
                )
            )
        responses.append(Alter.ReassignableTopicResponse(name=topic.name, partitions=partitions))
    return Alter(
        throttle_time_ms=0,
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=responses,
    )


def _alter_one(
    node_id: int,
    name: str,
    count: int | None,
    partition: AlterPartitionReassignmentsRequest.ReassignablePartition,
) -> tuple[int, str | None]:
    """(error code, message) of one partition's reassignment (``count``: the topic's
    partitions, None when it is unknown)."""
    if count is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
    if not 0 <= partition.partition_index < count:
        return (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Unable to find partition {name}:{partition.partition_index}.",
        )
    if partition.replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT_MESSAGE
    try:
        check_replicas(node_id, partition.replicas)
    except RiverbedError as exc:
        return error_code_for(exc), str(exc)
    return ErrorCode.NONE, None


def handle_list(
    deps: ReassignmentDeps, ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, topics=[]
    )
