"""DeleteRecords (key 21): move partitions' log start offset forward.

``offset`` -1 means the high watermark; an offset above the high watermark is
OFFSET_OUT_OF_RANGE (raised by the storage layer).  The response's ``low_watermark`` is
the new log start offset.  Records of an internal topic (``__consumer_offsets``...)
cannot be deleted: INVALID_TOPIC_EXCEPTION, as Kafka answers.

Partitions are resolved on the loop; the deletions themselves (a checkpoint write and
fsync per partition, segment files retired) run on the loop's default executor, one
partition after the other, so the loop keeps serving meanwhile.  The result is a
:class:`Barrier`: requests after this one on the connection see the new log starts.
"""

from __future__ import annotations

import asyncio
import logging

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import DeleteRecordsDeps, TrimLog
from riverbed.broker.topics import is_internal_topic
from riverbed.errors import InvalidTopicError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse

log = logging.getLogger(__name__)

API_KEY = 21

Partition = DeleteRecordsResponse.DeleteRecordsPartitionResult
Wanted = tuple[str, int, TrimLog | None, int, int]
"""(topic, partition, log or None, offset to delete before, error code if no log)."""


def handle(deps: DeleteRecordsDeps, ctx: RequestContext, request: DeleteRecordsRequest) -> Barrier:
    wanted: list[Wanted] = []
    for topic in request.topics:
        for p in topic.partitions:
            try:
                if is_internal_topic(topic.name):
                    raise InvalidTopicError(f"cannot delete records of internal topic {topic.name}")
                plog = deps.topics.partition_log(topic.name, p.partition_index)
            except Exception as exc:
                wanted.append((topic.name, p.partition_index, None, -1, error_code_for(exc)))
                continue
            offset = plog.high_watermark if p.offset == -1 else p.offset
            wanted.append((topic.name, p.partition_index, plog, offset, ErrorCode.NONE))
    loop = asyncio.get_running_loop()
    return Barrier(_answer(request, loop.run_in_executor(None, _delete_all, wanted)))


def _delete_all(wanted: list[Wanted]) -> dict[tuple[str, int], tuple[int, int]]:
    """On a worker thread: ``{(topic, partition): (low watermark, error code)}``."""
    results = {}
    for name, index, plog, offset, code in wanted:
        if plog is None:
            results[(name, index)] = (-1, code)
            continue
        try:
            results[(name, index)] = (plog.delete_records_before(offset), ErrorCode.NONE)
        except Exception as exc:
            code = error_code_for(exc)
            if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.exception("delete records of %s-%d failed", name, index)
            results[(name, index)] = (-1, code)
    return results


async def _answer(
    request: DeleteRecordsRequest,
    deleting: asyncio.Future[dict[tuple[str, int], tuple[int, int]]],
) -> DeleteRecordsResponse:
    results = await deleting
    return DeleteRecordsResponse(
        throttle_time_ms=0,
        topics=[
            DeleteRecordsResponse.DeleteRecordsTopicResult(
                name=topic.name,
                partitions=[
                    Partition(
                        partition_index=p.partition_index,
                        low_watermark=results[(topic.name, p.partition_index)][0],
                        error_code=results[(topic.name, p.partition_index)][1],
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )
