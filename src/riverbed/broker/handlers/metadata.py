"""Metadata (key 3): the single node, the cluster id and the topics asked for.

``topics = null`` lists every topic; unknown names are auto-created when the request
allows it (v4+ ``allow_auto_topic_creation``; always for v0-3) and the broker's
``auto.create.topics.enable`` is true, else UNKNOWN_TOPIC_OR_PARTITION — or
INVALID_TOPIC_EXCEPTION for a name Kafka would refuse (illegal characters, too long).
From v10 topics carry their persisted id; from v12 a topic may be asked for by id alone.  Every
partition's leader, replica and ISR is this node (leader epoch 0).  Auto-creation runs
on the topic manager's worker thread (a :class:`Barrier`); the answer comes once the
topics exist, as before.  ``is_internal`` is true for Kafka's internal topics
(:data:`~riverbed.broker.topics.INTERNAL_TOPICS`), not for any ``__`` name.
Authorized operations (v8+), when asked for: every operation Kafka supports on a topic
(and, v8-10, on the cluster), as Kafka answers without an authorizer; with one, the
authorization gate narrows them to the principal's
(:mod:`~riverbed.broker.handlers.authorized_operations`).
"""

from __future__ import annotations

import logging
import uuid

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.authorized_operations import OMITTED, all_operations
from riverbed.broker.handlers.deps import MetadataDeps
from riverbed.broker.security.authorizer import ResourceType
from riverbed.broker.topics import Topic, is_internal_topic, validate_topic_name
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


def handle(
    deps: MetadataDeps, ctx: RequestContext, request: MetadataRequest
) -> MetadataResponse | Barrier:
    answer = _handle(deps, ctx, request)
    if not (
        request.include_topic_authorized_operations or request.include_cluster_authorized_operations
    ):
        return answer
    if isinstance(answer, Barrier):
        return Barrier(_operations_later(answer, request))
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


async def _operations_later(answer: Barrier, request: MetadataRequest) -> MetadataResponse:
    response: MetadataResponse = await answer.awaitable
    return with_all_operations(response, request)


def _handle(
    deps: MetadataDeps, ctx: RequestContext, request: MetadataRequest
) -> MetadataResponse | Barrier:
    version = ctx.api_version
    allow_auto = version < AUTO_CREATE_FLAG_VERSION or bool(request.allow_auto_topic_creation)
    if request.topics is None:
        return _response(deps, [_topic(deps, t) for t in deps.topics.topics()], ctx.endpoint)
    wanted = request.topics
    if allow_auto:
        missing = [w.name for w in wanted if w.name is not None]
        missing = [name for name in missing if deps.topics.needs_creation(name)]
        if missing:
            return Barrier(_create_then_answer(deps, wanted, missing, ctx))
    return _response(deps, [_lookup(deps, w, {}, version) for w in wanted], ctx.endpoint)


async def _create_then_answer(
    deps: MetadataDeps,
    wanted: list[MetadataRequest.MetadataRequestTopic],
    missing: list[str],
    ctx: RequestContext,
) -> MetadataResponse:
    """Auto-create ``missing`` (off the loop, see TopicManager), then answer."""
    errors: dict[str, RiverbedError] = {}
    for name in dict.fromkeys(missing):
        try:
            await deps.topics.ensure_topic_async(name)
        except RiverbedError as exc:
            errors[name] = exc
    version = ctx.api_version
    return _response(deps, [_lookup(deps, w, errors, version) for w in wanted], ctx.endpoint)


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
    creation_errors: dict[str, RiverbedError],
    version: int,
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
        failed = creation_errors.get(name)
        if failed is not None:
            raise failed
        existing = deps.topics.get(name)
        if existing is None:
            validate_topic_name(name)  # Kafka: an illegal name is INVALID_TOPIC_EXCEPTION
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
