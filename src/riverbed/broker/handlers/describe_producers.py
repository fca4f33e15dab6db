"""DescribeProducers (key 61): the producers a partition's log tracks (its producer
state): id, epoch, last sequence and timestamp, coordinator epoch and the first offset
of the open transaction (-1: none) -- ``kafka-transactions describe-producers``, used to
find hanging transactions.  Unknown partitions answer UNKNOWN_TOPIC_OR_PARTITION.

Each partition's producers are a copy taken under the log's lock
(:meth:`PartitionLog.producer_states`: held for the copy only, no disk I/O), so the
answer is consistent even while an append, a marker or producer expiry runs on another
thread.  Event-loop only."""

from __future__ import annotations

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import DescribeProducersDeps
from riverbed.errors import error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DescribeProducersRequest, DescribeProducersResponse

API_KEY = 61

Response = DescribeProducersResponse


def handle(
    deps: DescribeProducersDeps, ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    return Response(
        throttle_time_ms=0,
        topics=[
            Response.TopicResponse(
                name=topic.name,
                partitions=[
                    _partition(deps, topic.name, index) for index in topic.partition_indexes
                ],
            )
            for topic in request.topics
        ],
    )


def _partition(
    deps: DescribeProducersDeps, name: str, index: int
) -> DescribeProducersResponse.PartitionResponse:
    try:
        entries = deps.topics.partition_log(name, index).producer_states()
    except Exception as exc:
        return Response.PartitionResponse(
            partition_index=index,
            error_code=error_code_for(exc),
            error_message=str(exc),
            active_producers=[],
        )
    producers = []
    for e in sorted(entries, key=lambda e: e.producer_id):
        last = e.batches[-1].last_seq if e.batches else -1
        producers.append(
            Response.ProducerState(
                producer_id=e.producer_id,
                producer_epoch=e.producer_epoch,
                last_sequence=last,
                last_timestamp=e.last_timestamp,
                coordinator_epoch=e.coordinator_epoch,
                current_txn_start_offset=e.current_txn_first_offset,
            )
        )
    return Response.PartitionResponse(
        partition_index=index,
        error_code=ErrorCode.NONE,
        error_message=None,
        active_producers=producers,
    )
