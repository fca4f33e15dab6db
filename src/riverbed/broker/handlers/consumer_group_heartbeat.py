"""ConsumerGroupHeartbeat (key 68): KIP-848 membership with the server-side assignor.

One request joins (epoch 0), heartbeats, reports owned partitions and leaves (epoch -1,
or -2 for a static member); the coordinator computes assignments (``uniform`` or
``range``).  Partitions travel by topic *id* on the wire and by name in the coordinator:
this adapter maps between them (owned partitions of a topic id we do not know are
dropped).  v1 adds the subscribed topic regex.

Checked here first, as Kafka's ``GroupCoordinatorService`` does (INVALID_REQUEST with
Kafka's message): a member id (empty only on a v0 join), and on a join (epoch 0) a
rebalance timeout and an empty (not null) TopicPartitions; no epoch below -2; no empty
instance or rack id.
"""

from __future__ import annotations

from collections.abc import Awaitable

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupDeps
from riverbed.broker.handlers.group_common import call
from riverbed.coordinator import ConsumerGroupHeartbeatRequest as Beat
from riverbed.coordinator import ConsumerGroupHeartbeatResponse as Beaten
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

API_KEY = 68

Resp = ConsumerGroupHeartbeatResponse


_JAVA_TRIM = "".join(chr(c) for c in range(33))
"""What Java's ``String.trim`` removes (Kafka calls a trimmed-empty string empty)."""


def _blank(value: str | None) -> bool:
    return value is not None and not value.strip(_JAVA_TRIM)


def invalid(request: ConsumerGroupHeartbeatRequest, version: int) -> str | None:
    """Kafka's message for a request its service layer refuses, else None (v1+ members
    make up their own member id, so it may be empty only on a v0 join)."""
    if (version >= 1 or request.member_epoch > 0 or request.member_epoch == -1) and _blank(
        request.member_id
    ):
        return "MemberId can't be empty."
    if _blank(request.group_id):
        return "GroupId can't be empty."
    if _blank(request.instance_id):
        return "InstanceId can't be empty."
    if _blank(request.rack_id):
        return "RackId can't be empty."
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if request.topic_partitions is None or request.topic_partitions:
            return "TopicPartitions must be empty when (re-)joining."
    elif request.member_epoch == -2:
        if request.instance_id is None:
            return "InstanceId can't be null."
    elif request.member_epoch < -2:
        return "MemberEpoch is invalid."
    return None


def handle(
    deps: GroupDeps, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse | Awaitable[ConsumerGroupHeartbeatResponse]:
    refused = invalid(request, ctx.api_version)
    if refused is not None:
        return ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.INVALID_REQUEST, error_message=refused
        )
    owned: dict[str, frozenset[int]] | None = None
    if request.topic_partitions is not None:
        owned = {}
        for tp in request.topic_partitions:
            topic = deps.topics.by_id(tp.topic_id)
            if topic is not None:
                owned[topic.name] = frozenset(tp.partitions)
    names = request.subscribed_topic_names
    req = Beat(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor,
        owned_partitions=owned,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
    )
    coordinator = deps.groups.coordinator

    def encode(answer: Beaten) -> ConsumerGroupHeartbeatResponse:
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
        return ConsumerGroupHeartbeatResponse(
            throttle_time_ms=0,
            error_code=answer.error_code,
            error_message=answer.error_message,
            member_id=answer.member_id,
            member_epoch=answer.member_epoch,
            heartbeat_interval_ms=answer.heartbeat_interval_ms,
            assignment=assignment,
        )

    return call(
        deps.groups,
        lambda now: coordinator.consumer_group_heartbeat(req, now),
        encode,
        lambda code: encode(Beaten(code)),
    )
