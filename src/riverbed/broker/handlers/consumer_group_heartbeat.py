"""ConsumerGroupHeartbeat (key 68): KIP-848 membership with the server-side assignor.

One request joins (epoch 0), heartbeats, reports owned partitions and leaves (epoch -1,
or -2 for a static member); the coordinator computes assignments (``uniform`` or
``range``).  Partitions travel by topic *id* on the wire and by name in the coordinator:
this adapter maps between them (owned partitions of a topic id we do not know are
dropped).  v1 adds the subscribed topic regex.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from riverbed.broker.handlers.group_common import call, client_host
from riverbed.coordinator import ConsumerGroupHeartbeatRequest as Beat
from riverbed.coordinator import ConsumerGroupHeartbeatResponse as Beaten
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

API_KEY = 68

Resp = ConsumerGroupHeartbeatResponse


def handle(
    broker: Broker, header: RequestHeader, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse | Awaitable[ConsumerGroupHeartbeatResponse]:
    owned: dict[str, frozenset[int]] | None = None
    if request.topic_partitions is not None:
        owned = {}
        for tp in request.topic_partitions:
            topic = broker.topics.by_id(tp.topic_id)
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
        client_id=header.client_id or "",
        client_host=client_host(),
    )
    coordinator = broker.groups.coordinator

    def encode(answer: Beaten) -> ConsumerGroupHeartbeatResponse:
        assignment = None
        if answer.assignment is not None:
            parts = []
            for name, partitions in sorted(answer.assignment.items()):
                topic = broker.topics.get(name)
                if topic is not None:
                    parts.append(Resp.TopicPartitions(topic_id=topic.topic_id,
                                                      partitions=sorted(partitions)))
            assignment = Resp.Assignment(topic_partitions=parts)
        return ConsumerGroupHeartbeatResponse(
            throttle_time_ms=0, error_code=answer.error_code,
            error_message=answer.error_message, member_id=answer.member_id,
            member_epoch=answer.member_epoch,
            heartbeat_interval_ms=answer.heartbeat_interval_ms, assignment=assignment,
        )

    return call(broker, lambda now: coordinator.consumer_group_heartbeat(req, now), encode,
                lambda code: encode(Beaten(code)))


