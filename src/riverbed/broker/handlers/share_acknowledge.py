"""ShareAcknowledge (key 79, v1-2): acknowledge acquired records without fetching.

The share session must exist and the epoch be its next one (epoch 0 is refused:
INVALID_SHARE_SESSION_EPOCH; no session: SHARE_SESSION_NOT_FOUND); -1 applies the
acknowledgements and then closes the session, releasing the member's other locks in it.
Each partition's batches are applied all or none by its share partition
(INVALID_RECORD_STATE for an offset the member does not hold, INVALID_REQUEST for a
malformed batch) and appended to ``__share_group_state``: the answer is sent once those
records are durable, so an acknowledged ACCEPT survives a crash.  v2 answers the group's
``AcquisitionLockTimeoutMs`` (RENEW acknowledgements extend the locks).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.share_common import (
    ShareFetchDeps,
    ack_batches,
    leader,
    top_level_error,
)
from riverbed.broker.share_sessions import FINAL_EPOCH, ShareSessionError
from riverbed.errors import error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse
from riverbed.protocol.topic_partition import TopicPartition

API_KEY = 79
Resp = ShareAcknowledgeResponse


def handle(
    deps: ShareFetchDeps, ctx: RequestContext, request: ShareAcknowledgeRequest
) -> asyncio.Future[ShareAcknowledgeResponse]:
    return asyncio.ensure_future(_acknowledge(deps, request, ctx.connection_id))


async def _acknowledge(
    deps: ShareFetchDeps, request: ShareAcknowledgeRequest, connection_id: int
) -> ShareAcknowledgeResponse:
    shares = deps.share_groups
    problem = top_level_error(shares.closed, request.group_id, request.member_id)
    if problem is not None:
        return _error(*problem)
    group_id, member_id = str(request.group_id), str(request.member_id)
    try:
        await shares.partitions.ensure_topic()
        session = shares.sessions.acknowledge_session(
            group_id, member_id, request.share_session_epoch, connection_id
        )
    except ShareSessionError as exc:
        return _error(exc.error_code, str(exc))
    except Exception as exc:
        return _error(error_code_for(exc), str(exc))
    flushes: list[concurrent.futures.Future[None]] = []
    node = leader(deps)
    by_topic: dict[uuid.UUID, list[Resp.PartitionData]] = {}
    for topic in request.topics:
        found = deps.topics.by_id(topic.topic_id)
        for part in topic.partitions:
            code, message = ErrorCode.NONE, None
            if found is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID
            elif not 0 <= part.partition_index < found.partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                tp = TopicPartition(found.name, part.partition_index)
                done = shares.partitions.acknowledge(
                    group_id, member_id, tp, ack_batches(part.acknowledgement_batches)
                )
                code, message = done.error_code, done.error_message
                flushes += done.flushes
            by_topic.setdefault(topic.topic_id, []).append(
                Resp.PartitionData(
                    partition_index=part.partition_index,
                    error_code=code,
                    error_message=message,
                    current_leader=Resp.LeaderIdAndEpoch(leader_id=node, leader_epoch=0),
                )
            )
    if request.share_session_epoch == FINAL_EPOCH:
        shares.sessions.close(group_id, member_id)
        flushes += shares.partitions.release_member_in(group_id, member_id, session.partitions)
    for fut in flushes:
        await asyncio.wrap_future(fut)
    return ShareAcknowledgeResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        acquisition_lock_timeout_ms=shares.partitions.partition_config(
            group_id
        ).record_lock_duration_ms,
        responses=[
            Resp.ShareAcknowledgeTopicResponse(topic_id=t, partitions=ps)
            for t, ps in by_topic.items()
        ],
        node_endpoints=[],
    )


def _error(code: ErrorCode, message: str | None) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )
