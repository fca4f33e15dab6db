"""Metadata (key 3): the single node, the cluster id and the topics asked for.

``topics = null`` lists every topic.  A topic asked for that does not exist answers
UNKNOWN_TOPIC_OR_PARTITION with no partitions (topic id zero, ``is_internal`` by name) --
or INVALID_TOPIC_EXCEPTION for a name Kafka would refuse (illegal characters, too long).
When the request allows it (v4+ ``allow_auto_topic_creation``; always for v0-3) and the
broker's ``auto.create.topics.enable`` is true, Metadata also starts creating the topic in
the background and answers at once, as Kafka 4.x's AutoTopicCreationManager does (measured
against Kafka 4.4: UNKNOWN_TOPIC_OR_PARTITION, not LEADER_NOT_AVAILABLE, while a creation
is under way); a Metadata after the creation finished answers the partitions.  Clients
retry on that error (it is retriable).  ``__consumer_offsets``, ``__transaction_state``
and ``__share_group_state`` are auto-created by their coordinators, with their own
partition counts and configs.  Names asked for twice are answered once, as in Kafka.
From v10 topics carry their persisted id; from v12 a topic may be asked for by id alone.  Every
partition's leader, replica and ISR is this node (leader epoch 0).  ``is_internal`` is
true for Kafka's internal topics (:data:`~riverbed.broker.topics.INTERNAL_TOPICS`), not
for any ``__`` name.
Authorized operations (v8+), when asked for: every operation Kafka supports on a topic
(and, v8-10, on the cluster), as Kafka answers without an authorizer; with one, the
authorization gate narrows them to the principal's
(:mod:`~riverbed.broker.handlers.authorized_operations`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.authorized_operations import OMITTED, all_operations
from riverbed.broker.handlers.deps import MetadataDeps
from riverbed.broker.security.authorizer import ResourceType
from riverbed.broker.share_partitions import SHARE_STATE_TOPIC_NAME
from riverbed.broker.topics import Topic, is_internal_topic, validate_topic_name
from riverbed.coordinator.partitioning import OFFSETS_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
from riverbed.errors import (
    ProtocolError,
    RiverbedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import MetadataRequest, MetadataResponse

log = logging.getLogger(__name__)

API_KEY = 3
AUTO_CREATE_FLAG_VERSION = 4
TOPIC_ID_LOOKUP_VERSION = 12  # Metadata looks topics up by id from v12 on
ZERO_UUID = uuid.UUID(int=0)
AUTHORIZED_OPERATIONS_OMITTED = OMITTED


def handle(deps: MetadataDeps, ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    answer = _handle(deps, ctx, request)
    if not (
        request.include_topic_authorized_operations or request.include_cluster_authorized_operations
    ):
        return answer
    return with_all_operations(answer, request)


def with_all_operations(response: MetadataResponse, request: MetadataRequest) -> MetadataResponse:
    """``response`` with the authorized operations a broker without an authorizer answers."""
    if request.include_cluster_authorized_operations:  # v8-10 only
        response.cluster_authorized_operations = all_operations(ResourceType.CLUSTER)
    if request.include_topic_authorized_operations:
        for topic in response.topics:
            if topic.name is not None:
                topic.topic_authorized_operations = all_operations(ResourceType.TOPIC)
    return response


def _handle(deps: MetadataDeps, ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    version = ctx.api_version
    if request.topics is None:
        return _response(deps, [_topic(deps, t) for t in deps.topics.topics()], ctx.endpoint)
    allow_auto = version < AUTO_CREATE_FLAG_VERSION or bool(request.allow_auto_topic_creation)
    asked: set[str] = set()
    topics = []
    for wanted in request.topics:
        if wanted.name is not None:
            if wanted.name in asked:
                continue  # Kafka asks its metadata cache for a set of names
            asked.add(wanted.name)
        topics.append(_lookup(deps, wanted, version, allow_auto))
    return _response(deps, topics, ctx.endpoint)


def _begin_auto_create(deps: MetadataDeps, name: str) -> None:
    """Start creating ``name`` (no wait); the coordinators make their internal topics."""
    create: Callable[[], Coroutine[Any, Any, None]] | None = None
    if name == OFFSETS_TOPIC_NAME:
        create = deps.groups.ensure_topic
    elif name == TRANSACTION_STATE_TOPIC_NAME:
        create = deps.transactions.ensure_topic
    elif name == SHARE_STATE_TOPIC_NAME:
        create = deps.share_groups.partitions.ensure_topic
    deps.topics.begin_auto_create(name, create)


def _response(
    deps: MetadataDeps,
    topics: list[MetadataResponse.MetadataResponseTopic],
    endpoint: tuple[str, int] | None,
) -> MetadataResponse:
    host, port = endpoint or (deps.host, deps.port)  # the listener the request came on
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponse.MetadataResponseBroker(
                node_id=deps.node_id, host=host, port=port, rack=None
            )
        ],
        cluster_id=deps.cluster_id,
        controller_id=deps.node_id,
        topics=topics,
        cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def _lookup(
    deps: MetadataDeps,
    wanted: MetadataRequest.MetadataRequestTopic,
    version: int,
    allow_auto: bool,
) -> MetadataResponse.MetadataResponseTopic:
    name = wanted.name
    topic_id = getattr(wanted, "topic_id", None)
    try:
        if name is None and version < TOPIC_ID_LOOKUP_VERSION:
            # v10-11 may carry a null name but cannot answer one; Kafka refuses these
            # requests ("Topic name can not be null for version N"): INVALID_REQUEST.
            name = ""
            raise ProtocolError(f"topic name can not be null in Metadata v{version}")
        if name is None:
            found = deps.topics.by_id(topic_id) if topic_id is not None else None
            if found is None:
                raise UnknownTopicIdError(f"unknown topic id {topic_id}")
            return _topic(deps, found)
        existing = deps.topics.get(name)
        if existing is None:
            validate_topic_name(name)  # Kafka: an illegal name is INVALID_TOPIC_EXCEPTION
            if allow_auto:
                _begin_auto_create(deps, name)
            raise UnknownTopicOrPartitionError(f"unknown topic {name!r}")
        return _topic(deps, existing)
    except RiverbedError as exc:
        return MetadataResponse.MetadataResponseTopic(
            error_code=error_code_for(exc),
            name=name,
            topic_id=topic_id if topic_id is not None else ZERO_UUID,
            is_internal=name is not None and is_internal_topic(name),
            partitions=[],
            topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
        )


def _topic(deps: MetadataDeps, topic: Topic) -> MetadataResponse.MetadataResponseTopic:
    node = deps.node_id
    return MetadataResponse.MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=is_internal_topic(topic.name),
        partitions=[
            MetadataResponse.MetadataResponsePartition(
                error_code=ErrorCode.NONE,
                partition_index=p,
                leader_id=node,
                leader_epoch=0,
                replica_nodes=[node],
                isr_nodes=[node],
                offline_replicas=[],
            )
            for p in range(topic.partitions)
        ],
        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )
