"""DeleteTopics (key 20): delete topics by name (v0-5) or by name or id (v6+).

Each topic is independent; an unknown one is UNKNOWN_TOPIC_OR_PARTITION (or
UNKNOWN_TOPIC_ID).  Long-poll fetches waiting on a deleted topic are woken so they answer
with the error instead of waiting out their timeout.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from riverbed.errors import RiverbedError, UnknownTopicIdError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import DeleteTopicsRequest, DeleteTopicsResponse

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

API_KEY = 20
TOPIC_STATES_VERSION = 6
ZERO_UUID = uuid.UUID(int=0)

Result = DeleteTopicsResponse.DeletableTopicResult


def handle(
    broker: Broker, header: RequestHeader, request: DeleteTopicsRequest
) -> DeleteTopicsResponse:
    if header.api_version >= TOPIC_STATES_VERSION:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    results = [_delete(broker, name, topic_id) for name, topic_id in wanted]
    broker.purgatory.notify_all()
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


def _delete(broker: Broker, name: str | None, topic_id: uuid.UUID) -> Result:
    try:
        if name is None:
            found = broker.topics.by_id(topic_id)
            if found is None:
                raise UnknownTopicIdError(f"unknown topic id {topic_id}")
            name = found.name
        topic = broker.topics.delete_topic(name)
    except RiverbedError as exc:
        return Result(
            name=name, topic_id=topic_id, error_code=error_code_for(exc), error_message=str(exc)
        )
    return Result(name=name, topic_id=topic.topic_id, error_code=ErrorCode.NONE, error_message=None)
