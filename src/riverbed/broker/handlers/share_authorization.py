"""ACL gates of the share group APIs (KIP-932), Kafka's rules (``KafkaApis``):

=========================  =========================================================
ShareGroupHeartbeat        group READ (GROUP_AUTHORIZATION_FAILED)
ShareGroupDescribe         group DESCRIBE (that group: GROUP_AUTHORIZATION_FAILED)
ShareFetch                 group READ (top level); topic READ (the topic's partitions:
                           TOPIC_AUTHORIZATION_FAILED, nothing acquired from them)
ShareAcknowledge           group READ (top level); topic READ (as ShareFetch; their
                           acknowledgements are not applied)
DescribeShareGroupOffsets  group DESCRIBE (that group); topic DESCRIBE (named: the topic's
                           partitions TOPIC_AUTHORIZATION_FAILED, listed last; all the
                           group's: the topic left out)
AlterShareGroupOffsets     group READ (top level); topic READ (the topic's partitions,
                           listed first)
DeleteShareGroupOffsets    group DELETE (top level); topic READ (the topic, listed first)
=========================  =========================================================

Registered in :data:`riverbed.broker.handlers.authorization.GATES` (:data:`SHARE_GATES`);
each gate is called only when an authorizer is configured, with that module's ``Check``
(the principal's questions), the request and the bound route.  Event-loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from riverbed.broker.security.authorizer import AclOperation as Op
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    ShareAcknowledgeResponse,
    ShareFetchResponse,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatResponse,
)
from riverbed.protocol.messages.generated.alter_share_group_offsets_response import (
    AlterShareGroupOffsetsResponse,
)
from riverbed.protocol.messages.generated.delete_share_group_offsets_response import (
    DeleteShareGroupOffsetsResponse,
)
from riverbed.protocol.messages.generated.describe_share_group_offsets_response import (
    DescribeShareGroupOffsetsResponse,
)

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
Route = Any
Check = Any  # riverbed.broker.handlers.authorization.Check (imported there: no cycle)
ShareGate = Callable[[Check, Any, Route], Any]


def _then(result: Any, finish: Callable[[Any], Any]) -> Any:
    if isinstance(result, Awaitable):

        async def wait() -> Any:
            return finish(await result)

        return asyncio.ensure_future(wait())
    return finish(result)


def _heartbeat(c: Check, request: Any, route: Route) -> Any:
    if not c.group(Op.READ, request.group_id):
        return ShareGroupHeartbeatResponse(
            throttle_time_ms=0,
            error_code=GROUP_DENIED,
            error_message=None,
            member_id=None,
            member_epoch=0,
            heartbeat_interval_ms=0,
            assignment=None,
        )
    return route(c.ctx, request)


def _describe(c: Check, request: Any, route: Route) -> Any:
    denied = [g for g in request.group_ids if not c.group(Op.DESCRIBE, g)]
    request.group_ids = [g for g in request.group_ids if g not in denied]

    def finish(response: Any) -> Any:
        for g in denied:
            response.groups.append(
                ShareGroupDescribeResponse.DescribedGroup(
                    error_code=GROUP_DENIED, group_id=g, members=[]
                )
            )
        return response

    return _then(route(c.ctx, request), finish)


def _topic_name(c: Check, topic_id: Any) -> str | None:
    found = c.deps.topics.by_id(topic_id)
    return None if found is None else str(found.name)


def _denied_ids(c: Check, topics: list[Any], op: Op) -> set[Any]:
    out = set()
    for t in topics:
        name = _topic_name(c, t.topic_id)
        if name is not None and not c.topic(op, name):
            out.add(t.topic_id)
    return out


def _share_fetch(c: Check, request: Any, route: Route) -> Any:
    if not c.group(Op.READ, request.group_id):
        return ShareFetchResponse(throttle_time_ms=0, error_code=GROUP_DENIED, responses=[])
    denied = _denied_ids(c, request.topics, Op.READ)
    gone = [t for t in request.topics if t.topic_id in denied]
    request.topics = [t for t in request.topics if t.topic_id not in denied]
    extra = [
        ShareFetchResponse.ShareFetchableTopicResponse(
            topic_id=t.topic_id,
            partitions=[
                ShareFetchResponse.PartitionData(
                    partition_index=p.partition_index,
                    error_code=TOPIC_DENIED,
                    acknowledge_error_code=TOPIC_DENIED,
                    current_leader=ShareFetchResponse.LeaderIdAndEpoch(
                        leader_id=-1, leader_epoch=-1
                    ),
                    records=None,
                    acquired_records=[],
                )
                for p in t.partitions
            ],
        )
        for t in gone
    ]
    return _then(route(c.ctx, request), lambda r: (r.responses.extend(extra), r)[1])


def _share_acknowledge(c: Check, request: Any, route: Route) -> Any:
    if not c.group(Op.READ, request.group_id):
        return ShareAcknowledgeResponse(throttle_time_ms=0, error_code=GROUP_DENIED, responses=[])
    denied = _denied_ids(c, request.topics, Op.READ)
    gone = [t for t in request.topics if t.topic_id in denied]
    request.topics = [t for t in request.topics if t.topic_id not in denied]
    extra = [
        ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse(
            topic_id=t.topic_id,
            partitions=[
                ShareAcknowledgeResponse.PartitionData(
                    partition_index=p.partition_index,
                    error_code=TOPIC_DENIED,
                    current_leader=ShareAcknowledgeResponse.LeaderIdAndEpoch(
                        leader_id=-1, leader_epoch=-1
                    ),
                )
                for p in t.partitions
            ],
        )
        for t in gone
    ]
    return _then(route(c.ctx, request), lambda r: (r.responses.extend(extra), r)[1])


def _describe_offsets(c: Check, request: Any, route: Route) -> Any:
    """As Kafka 4.4 answers: named topics the principal may not DESCRIBE are taken out of
    the request and answered TOPIC_AUTHORIZATION_FAILED after the others; with null
    topics (all the group's), such topics are left out of the answer."""
    R = DescribeShareGroupOffsetsResponse
    denied_groups = [g for g in request.groups if not c.group(Op.DESCRIBE, g.group_id)]
    request.groups = [g for g in request.groups if g not in denied_groups]
    hidden: dict[str, list[Any]] = {}
    for g in request.groups:
        if g.topics is None:
            continue
        gone = [t for t in g.topics if not c.topic(Op.DESCRIBE, t.topic_name)]
        g.topics = [t for t in g.topics if t not in gone]
        hidden[g.group_id] = gone

    def finish(response: Any) -> Any:
        for group in response.groups:
            if group.group_id not in hidden:  # null topics: drop what may not be described
                group.topics = [t for t in group.topics if c.topic(Op.DESCRIBE, t.topic_name)]
                continue
            if group.error_code != 0:
                continue
            group.topics.extend(
                R.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=t.topic_name,
                    partitions=[
                        R.DescribeShareGroupOffsetsResponsePartition(
                            partition_index=p,
                            start_offset=-1,
                            leader_epoch=0,
                            lag=-1,
                            error_code=TOPIC_DENIED,
                        )
                        for p in t.partitions
                    ],
                )
                for t in hidden[group.group_id]
            )
        for g in denied_groups:
            response.groups.append(
                R.DescribeShareGroupOffsetsResponseGroup(
                    group_id=g.group_id, topics=[], error_code=GROUP_DENIED
                )
            )
        return response

    return _then(route(c.ctx, request), finish)


def _prepend(extra: list[Any]) -> Callable[[Any], Any]:
    """Denied topics listed before the route's answers, as Kafka 4.4 lists them."""

    def finish(response: Any) -> Any:
        response.responses[:0] = extra
        return response

    return finish


def _alter_offsets(c: Check, request: Any, route: Route) -> Any:
    R = AlterShareGroupOffsetsResponse
    if not c.group(Op.READ, request.group_id):
        return R(error_code=GROUP_DENIED, responses=[])
    gone = [t for t in request.topics if not c.topic(Op.READ, t.topic_name)]
    request.topics = [t for t in request.topics if t not in gone]
    extra = [
        R.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name,
            partitions=[
                R.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=TOPIC_DENIED
                )
                for p in t.partitions
            ],
        )
        for t in gone
    ]
    return _then(route(c.ctx, request), _prepend(extra))


def _delete_offsets(c: Check, request: Any, route: Route) -> Any:
    R = DeleteShareGroupOffsetsResponse
    if not c.group(Op.DELETE, request.group_id):
        return R(error_code=GROUP_DENIED, responses=[])
    gone = [t for t in request.topics if not c.topic(Op.READ, t.topic_name)]
    request.topics = [t for t in request.topics if t not in gone]
    extra = [
        R.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name, error_code=TOPIC_DENIED)
        for t in gone
    ]
    return _then(route(c.ctx, request), _prepend(extra))


SHARE_GATES: dict[int, ShareGate] = {
    76: _heartbeat,
    77: _describe,
    78: _share_fetch,
    79: _share_acknowledge,
    90: _describe_offsets,
    91: _alter_offsets,
    92: _delete_offsets,
}
