"""CreateTopics (key 19): create topics, or only validate them (``validate_only``).

Each topic is independent: a bad name (INVALID_TOPIC_EXCEPTION), an existing topic
(TOPIC_ALREADY_EXISTS), a replication factor other than 1 or -1
(INVALID_REPLICATION_FACTOR), a partition count below 1 (INVALID_PARTITIONS) or past
``max.broker.partitions`` (POLICY_VIOLATION), an explicit replica assignment naming
anything but this node alone (INVALID_REPLICA_ASSIGNMENT, see
:mod:`~riverbed.broker.replica_assignment`) or a bad config (INVALID_CONFIG,
naming the key) fail that topic only, with a message saying what is wrong.  A name listed
more than once is not created: it is answered once, INVALID_REQUEST "Duplicate topic
name.", after the others (Kafka's ``ControllerApis``).  v5+ responses carry the created
topic's effective configs.

The partitions are created on the topic manager's worker thread (a :class:`Barrier`:
requests after this one on the connection wait for it); a topic answered without error is
visible to every client once the response is sent.

``timeout_ms`` (as Kafka): every topic is validated first; the answer waits at most
``timeout_ms`` for the creations, and a topic not created by then is REQUEST_TIMED_OUT
while its creation goes on in the background (it appears when done; a retry meanwhile is
TOPIC_ALREADY_EXISTS).  ``timeout_ms <= 0`` answers right after validation: every valid
topic REQUEST_TIMED_OUT, its creation started.  ``validate_only`` never waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import TopicAdminDeps
from riverbed.broker.replica_assignment import partitions_of_assignment
from riverbed.broker.topic_configs import check_requested, describe_topic_configs
from riverbed.errors import ProtocolError, RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreateTopicsRequest, CreateTopicsResponse

log = logging.getLogger(__name__)

API_KEY = 19

Result = CreateTopicsResponse.CreatableTopicResult


def handle(deps: TopicAdminDeps, ctx: RequestContext, request: CreateTopicsRequest) -> Barrier:
    return Barrier(_handle(deps, request))


async def _handle(deps: TopicAdminDeps, request: CreateTopicsRequest) -> CreateTopicsResponse:
    validate_only = bool(request.validate_only)
    results: list[Result | None] = []
    creating: dict[int, asyncio.Task[Result]] = {}
    counts = Counter(wanted.name for wanted in request.topics)
    duplicates = [name for name, count in counts.items() if count > 1]
    for wanted in request.topics:
        if counts[wanted.name] > 1:
            continue
        checked = await _create(deps, wanted, True)  # validation only: no await inside
        if checked.error_code != ErrorCode.NONE or validate_only:
            results.append(checked)
            continue
        # Started now, in request order (a task's first step checks the name again and
        # takes it before the next task's runs).
        creating[len(results)] = asyncio.ensure_future(_create(deps, wanted, False))
        results.append(None)
    if creating and request.timeout_ms > 0:
        await asyncio.wait(creating.values(), timeout=request.timeout_ms / 1000)
    for index, task in creating.items():
        if task.done():
            results[index] = task.result()
        else:  # left to finish on its own (not cancelled: it may not have started yet)
            task.add_done_callback(_settled)
            results[index] = _timed_out(request.topics[index].name, request.timeout_ms)
    results += [_duplicate(name) for name in duplicates]
    return CreateTopicsResponse(throttle_time_ms=0, topics=[r for r in results if r is not None])


def _duplicate(name: str) -> Result:
    return Result(
        name=name,
        error_code=ErrorCode.INVALID_REQUEST,
        error_message="Duplicate topic name.",
        num_partitions=-1,
        replication_factor=-1,
        configs=None,
    )


def _settled(task: asyncio.Task[Result]) -> None:
    if not task.cancelled() and task.exception() is not None:  # retrieved: logged once
        log.error("creating a topic after its request timed out failed", exc_info=task.exception())


def _timed_out(name: str, timeout_ms: int) -> Result:
    return Result(
        name=name,
        error_code=ErrorCode.REQUEST_TIMED_OUT,
        error_message=f"the topic was not created within timeout_ms={timeout_ms}; "
        "its creation continues in the background",
        num_partitions=-1,
        replication_factor=-1,
        configs=None,
    )


async def _create(
    deps: TopicAdminDeps, wanted: CreateTopicsRequest.CreatableTopic, validate_only: bool
) -> Result:
    try:
        num_partitions, replication_factor = wanted.num_partitions, wanted.replication_factor
        if wanted.assignments:
            for field, value in (
                ("numPartitions", num_partitions),
                ("replicationFactor", replication_factor),
            ):
                if value != -1:
                    raise ProtocolError(
                        "A manual partition assignment was specified, but "
                        f"{field} was not set to -1."
                    )
            num_partitions = partitions_of_assignment(
                deps.node_id, [(a.partition_index, a.broker_ids) for a in wanted.assignments]
            )
        configs = {c.name: c.value for c in wanted.configs if c.value is not None}
        check_requested(configs)  # segment.bytes >= 1 MiB, as Kafka 4.x
        topic = await deps.topics.create_topic_async(
            wanted.name,
            num_partitions,
            replication_factor,
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
