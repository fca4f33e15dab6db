"""CreatePartitions (key 37): grow a topic's partition count (``validate_only`` too).

A count not above the current one is INVALID_PARTITIONS; one past
``max.broker.partitions``, or any change to an internal topic, is POLICY_VIOLATION;
explicit assignments must name this node alone for each new partition
(INVALID_REPLICA_ASSIGNMENT otherwise); an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION.  The new
partitions are created on the topic manager's worker thread (a :class:`Barrier`) and
become visible to every client at once, before the response is sent.
"""

from __future__ import annotations

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TopicAdminDeps
from riverbed.broker.replica_assignment import check_new_partitions
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse

API_KEY = 37

Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def handle(deps: TopicAdminDeps, ctx: RequestContext, request: CreatePartitionsRequest) -> Barrier:
    return Barrier(_handle(deps, request))


async def _handle(
    deps: TopicAdminDeps, request: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    results = []
    for topic in request.topics:
        try:
            current = deps.topics.get(topic.name)
            if (
                topic.assignments and current is not None and topic.count > current.partitions
            ):  # else INVALID_PARTITIONS below
                check_new_partitions(
                    deps.node_id,
                    topic.count - current.partitions,
                    [a.broker_ids for a in topic.assignments],
                )
            await deps.topics.create_partitions_async(
                topic.name, topic.count, validate_only=bool(request.validate_only)
            )
        except RiverbedError as exc:
            results.append(
                Result(name=topic.name, error_code=error_code_for(exc), error_message=str(exc))
            )
            continue
        results.append(Result(name=topic.name, error_code=ErrorCode.NONE, error_message=None))
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)
