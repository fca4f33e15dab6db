"""ListOffsets (key 2): offsets by timestamp, and the special earliest/latest queries.

``timestamp`` -2 (earliest) and -4 (earliest local) answer the log start offset; -1
(latest) answers the high watermark, or the last stable offset under read_committed
(``isolation_level`` 1, v2+), where a timestamp lookup landing at or past the LSO finds
nothing, as in Kafka; -3 (max timestamp, KIP-734) answers
the first record carrying the log's largest timestamp, found as Kafka finds it (see
:func:`riverbed.storage.timestamps.offset_of_max_timestamp`), or offset -1 on an empty
log; -5 (earliest pending upload, tiered storage) answers offset -1; a timestamp >= 0
answers the first offset whose batch's max timestamp is >= it, or offset -1 when there is
none (Kafka's behaviour).
"""

from __future__ import annotations

import logging

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import ListOffsetsDeps
from riverbed.errors import error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from riverbed.storage.timestamps import offset_of_max_timestamp
from riverbed.storage.transactions import IsolationLevel

log = logging.getLogger(__name__)

API_KEY = 2
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
ISOLATION_VERSION = 2

Partition = ListOffsetsResponse.ListOffsetsPartitionResponse


def handle(
    deps: ListOffsetsDeps, ctx: RequestContext, request: ListOffsetsRequest
) -> ListOffsetsResponse:
    topics = []
    committed = ctx.api_version >= ISOLATION_VERSION and request.isolation_level == 1
    isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    for topic in request.topics:
        parts = [_offset(deps, topic.name, p, isolation) for p in topic.partitions]
        topics.append(
            ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=parts)
        )
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def _offset(
    deps: ListOffsetsDeps,
    name: str,
    wanted: ListOffsetsRequest.ListOffsetsPartition,
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> Partition:
    index = wanted.partition_index
    ts = wanted.timestamp
    try:
        plog = deps.topics.partition_log(name, index)
        offset, found_ts = -1, -1
        if ts in (EARLIEST, EARLIEST_LOCAL):
            offset = plog.log_start_offset
        elif ts == LATEST and isolation is IsolationLevel.READ_COMMITTED:
            offset = plog.last_stable_offset
        elif ts == LATEST:
            offset = plog.high_watermark
        elif ts == MAX_TIMESTAMP:
            found = offset_of_max_timestamp(plog.segments())
            if found is not None:
                offset, found_ts = found
        elif ts >= 0:
            found = plog.offset_for_timestamp(ts, isolation=isolation)
            if found is not None:
                offset, found_ts = found
    except Exception as exc:
        code = error_code_for(exc)
        if code == ErrorCode.UNKNOWN_SERVER_ERROR:
            log.exception("list offsets of %s-%d failed", name, index)
        return Partition(
            partition_index=index,
            error_code=code,
            old_style_offsets=[],
            timestamp=-1,
            offset=-1,
            leader_epoch=-1,
        )
    return Partition(
        partition_index=index,
        error_code=ErrorCode.NONE,
        old_style_offsets=[offset],
        timestamp=found_ts,
        offset=offset,
        leader_epoch=0,
    )
