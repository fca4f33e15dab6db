"""CreateTopics (key 19): create topics, or only validate them (``validate_only``).

Each topic is independent: a bad name (INVALID_TOPIC_EXCEPTION), an existing topic
(TOPIC_ALREADY_EXISTS), a replication factor other than 1 or -1
(INVALID_REPLICATION_FACTOR), a partition count below 1 (INVALID_PARTITIONS) or past
``max.broker.partitions`` (POLICY_VIOLATION), explicit replica assignments
(INVALID_REQUEST: a single node has none to choose) or a bad config (INVALID_CONFIG,
naming the key) fail that topic only, with a message saying what is wrong.  v5+
responses carry the created topic's effective configs.

The partitions are created on the topic manager's worker thread (a :class:`Barrier`:
requests after this one on the connection wait for it); the topics are visible to every
client once the response is sent.
"""

from __future__ import annotations

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TopicAdminDeps
from riverbed.broker.topic_configs import describe_topic_configs
from riverbed.errors import ProtocolError, RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreateTopicsRequest, CreateTopicsResponse

API_KEY = 19

Result = CreateTopicsResponse.CreatableTopicResult


def handle(deps: TopicAdminDeps, ctx: RequestContext, request: CreateTopicsRequest) -> Barrier:
    return Barrier(_handle(deps, request))


async def _handle(deps: TopicAdminDeps, request: CreateTopicsRequest) -> CreateTopicsResponse:
    results = [await _create(deps, t, bool(request.validate_only)) for t in request.topics]
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


async def _create(
    deps: TopicAdminDeps, wanted: CreateTopicsRequest.CreatableTopic, validate_only: bool
) -> Result:
    try:
        if wanted.assignments:
            raise ProtocolError("manual replica assignment is not supported")
        configs = {c.name: c.value for c in wanted.configs if c.value is not None}
        topic = await deps.topics.create_topic_async(
            wanted.name,
            wanted.num_partitions,
            wanted.replication_factor,
            configs,
            validate_only=validate_only,
        )
    except RiverbedError as exc:
        return Result(
            name=wanted.name,
            error_code=error_code_for(exc),
            error_message=str(exc),
            num_partitions=-1,
            replication_factor=-1,
            configs=None,
        )
    return Result(
        name=topic.name,
        topic_id=topic.topic_id,
        error_code=ErrorCode.NONE,
        error_message=None,
        num_partitions=topic.partitions,
        replication_factor=1,
        configs=[
            CreateTopicsResponse.CreatableTopicConfigs(
                name=entry.name,
                value=entry.value,
                read_only=entry.read_only,
                config_source=entry.source,
                is_sensitive=False,
            )
            for entry in describe_topic_configs(deps, topic.configs)
        ],
    )
