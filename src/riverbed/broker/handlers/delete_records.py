"""DeleteRecords (key 21): move partitions' log start offset forward.

``offset`` -1 means the high watermark; an offset above the high watermark is
OFFSET_OUT_OF_RANGE (raised by the storage layer).  The response's ``low_watermark`` is
the new log start offset.  Records of an internal topic (``__consumer_offsets``...)
cannot be deleted: INVALID_TOPIC_EXCEPTION, as Kafka answers.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from riverbed.broker.topics import is_internal_topic
from riverbed.errors import InvalidTopicError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

log = logging.getLogger(__name__)

API_KEY = 21

Partition = DeleteRecordsResponse.DeleteRecordsPartitionResult


def handle(
    broker: Broker, header: RequestHeader, request: DeleteRecordsRequest
) -> DeleteRecordsResponse:
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            try:
                if is_internal_topic(topic.name):
                    raise InvalidTopicError(f"cannot delete records of internal topic {topic.name}")
                plog = broker.topics.partition_log(topic.name, p.partition_index)
                offset = plog.high_watermark if p.offset == -1 else p.offset
                low = plog.delete_records_before(offset)
            except Exception as exc:
                code = error_code_for(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("delete records of %s-%d failed", topic.name, p.partition_index)
                parts.append(
                    Partition(partition_index=p.partition_index, low_watermark=-1, error_code=code)
                )
                continue
            parts.append(
                Partition(
                    partition_index=p.partition_index, low_watermark=low, error_code=ErrorCode.NONE
                )
            )
        topics.append(
            DeleteRecordsResponse.DeleteRecordsTopicResult(name=topic.name, partitions=parts)
        )
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)
