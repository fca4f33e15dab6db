"""DeleteTopics (key 20): delete topics by name (v0-5) or by name or id (v6+).

Each topic is independent; an unknown one is UNKNOWN_TOPIC_OR_PARTITION (or
UNKNOWN_TOPIC_ID).  An internal topic is refused with POLICY_VIOLATION (Kafka itself
allows it, and every consumer group then fails until a restart).  With
``delete.topic.enable=false`` every topic answers TOPIC_DELETION_DISABLED (INVALID_REQUEST
before v3, as in Kafka).  Long-poll fetches waiting on a deleted topic are woken so they answer
with the error instead of waiting out their timeout.  A deleted topic is gone for every
request at once; its partition directories are renamed out of the way on the topic
manager's worker thread (a :class:`Barrier`) and the response is sent once they are;
closing and removing them follows on the same worker.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import DeleteTopicsDeps
from riverbed.errors import RiverbedError, UnknownTopicIdError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse

if TYPE_CHECKING:
    pass
    from riverbed.broker.topics import Topic

API_KEY = 20
DELETION_DISABLED_VERSION = 3
TOPIC_STATES_VERSION = 6
ZERO_UUID = uuid.UUID(int=0)

Result = DeleteTopicsResponse.DeletableTopicResult


def handle(deps: DeleteTopicsDeps, ctx: RequestContext, request: DeleteTopicsRequest) -> Barrier:
    return Barrier(_handle(deps, ctx, request))


async def _handle(
    deps: DeleteTopicsDeps, ctx: RequestContext, request: DeleteTopicsRequest
) -> DeleteTopicsResponse:
    if ctx.api_version >= TOPIC_STATES_VERSION:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    begun = [_begin(deps, name, topic_id) for name, topic_id in wanted]
    if ctx.api_version < DELETION_DISABLED_VERSION:
        begun = [_old_deletion_disabled(r) if isinstance(r, Result) else r for r in begun]
    deps.purgatory.notify_all()  # the topics are already gone for every request
    results = [r if isinstance(r, Result) else await _finish(*r) for r in begun]
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


def _begin(
    deps: DeleteTopicsDeps, name: str | None, topic_id: uuid.UUID
) -> Result | tuple[Awaitable[Topic], str, uuid.UUID]:
    """Unpublish ``name`` now; its error result, or what :func:`_finish` awaits."""
    try:
        if name is None:
            found = deps.topics.by_id(topic_id)
            if found is None:
                raise UnknownTopicIdError(f"unknown topic id {topic_id}")
            name = found.name
        return deps.topics.begin_delete_topic(name), name, topic_id
    except RiverbedError as exc:
        return Result(
            name=name, topic_id=topic_id, error_code=error_code_for(exc), error_message=str(exc)
        )


def _old_deletion_disabled(result: Result) -> Result:
    """Before v3 the TOPIC_DELETION_DISABLED code did not exist: INVALID_REQUEST."""
    if result.error_code == ErrorCode.TOPIC_DELETION_DISABLED:
        result.error_code = ErrorCode.INVALID_REQUEST
    return result


async def _finish(deletion: Awaitable[Topic], name: str, topic_id: uuid.UUID) -> Result:
    try:
        topic = await deletion
    except RiverbedError as exc:
        return Result(
            name=name, topic_id=topic_id, error_code=error_code_for(exc), error_message=str(exc)
        )
    return Result(name=name, topic_id=topic.topic_id, error_code=ErrorCode.NONE, error_message=None)
