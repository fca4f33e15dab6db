"""ShareGroupHeartbeat (key 76, v1): KIP-932 share group membership.

Join (epoch 0, with the subscribed topics and a client-generated member id), heartbeat,
leave (epoch -1); the coordinator (:mod:`riverbed.coordinator.share_group`) answers the
member epoch, the heartbeat interval and, when it changed, the assignment — partitions by
topic *id* on the wire, by name in the coordinator (this adapter maps them).  Members it
removes have their acquired records released by the service.
"""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.share_deps import ShareGroupDeps
from riverbed.coordinator.share_group import ShareGroupHeartbeatRequest as Beat
from riverbed.coordinator.share_group import ShareGroupHeartbeatResponse as Beaten
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

API_KEY = 76

Resp = ShareGroupHeartbeatResponse


def handle(
    deps: ShareGroupDeps, ctx: RequestContext, request: ShareGroupHeartbeatRequest
) -> ShareGroupHeartbeatResponse:
    names = request.subscribed_topic_names
    req = Beat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        rack_id=request.rack_id,
        subscribed_topic_names=None if names is None else tuple(names),
        client_id=ctx.client_id,
        client_host=ctx.client_host,
    )
    if deps.share_groups.closed:
        return _encode(deps, Beaten(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    return _encode(deps, deps.share_groups.heartbeat(req))


def _encode(deps: ShareGroupDeps, answer: Beaten) -> ShareGroupHeartbeatResponse:
    assignment = None
    if answer.assignment is not None:
        parts = []
        for name, partitions in sorted(answer.assignment.items()):
            topic = deps.topics.get(name)
            if topic is not None:
                parts.append(
                    Resp.TopicPartitions(topic_id=topic.topic_id, partitions=sorted(partitions))
                )
        assignment = Resp.Assignment(topic_partitions=parts)
    return ShareGroupHeartbeatResponse(
        throttle_time_ms=0,
        error_code=answer.error_code,
        error_message=answer.error_message,
        member_id=answer.member_id,
        member_epoch=answer.member_epoch,
        heartbeat_interval_ms=answer.heartbeat_interval_ms,
        assignment=assignment,
    )
