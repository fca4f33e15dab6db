"""Fetch (key 1): serve stored batches, long-polling until ``min_bytes`` or ``max_wait_ms``.

Reads are the stored bytes as they are (no per-record work).  Limits: each partition
reads at most ``partition_max_bytes`` and the response at most ``max_bytes``, except
that the first non-empty partition always returns at least one whole batch (KIP-74), so
a consumer cannot get stuck behind a batch larger than its limits.

Long polling: when fewer than ``min_bytes`` are available, the fetch registers with the
:class:`~riverbed.broker.purgatory.FetchPurgatory` on all its partitions — in the same
event-loop step as the read, so no append can slip in between — and is woken by the next
append to any of them, re-reads, and answers once ``min_bytes`` is reached, the deadline
passes, or the broker shuts down.  A partition error answers at once.

Fetch sessions are not kept: every response carries session id 0 (a full fetch each
time), which every client accepts.  Topic ids (v13+) resolve through the topic manager;
an unknown id is UNKNOWN_TOPIC_ID for that partition.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from riverbed.errors import UnknownTopicIdError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import FetchRequest, FetchResponse

if TYPE_CHECKING:
    from riverbed.broker.server import Broker

log = logging.getLogger(__name__)

API_KEY = 1
TOPIC_IDS_VERSION = 13


@dataclass(slots=True)
class _Read:
    topic: FetchResponse.FetchableTopicResponse
    name: str
    partitions: list[tuple[FetchRequest.FetchPartition, FetchResponse.PartitionData]]


def handle(
    broker: Broker, header: RequestHeader, request: FetchRequest
) -> FetchResponse | asyncio.Future[FetchResponse]:
    uses_ids = header.api_version >= TOPIC_IDS_VERSION
    response, total, errors = _read_all(broker, request, uses_ids)
    if (
        total >= request.min_bytes
        or request.max_wait_ms <= 0
        or errors
        or broker.closing
        or not request.topics
    ):
        return response
    tps = [(_name(broker, t, uses_ids), p.partition) for t in request.topics for p in t.partitions]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait_ms / 1000
    wake = broker.purgatory.watch(tps)
    return asyncio.ensure_future(_long_poll(broker, request, uses_ids, tps, deadline, wake))


async def _long_poll(
    broker: Broker,
    request: FetchRequest,
    uses_ids: bool,
    tps: list[tuple[str, int]],
    deadline: float,
    wake: asyncio.Future[None],
) -> FetchResponse:
    loop = asyncio.get_running_loop()
    purgatory = broker.purgatory
    while True:
        try:
            remaining = deadline - loop.time()
            if remaining > 0:
                await asyncio.wait([wake], timeout=remaining)
        finally:
            purgatory.unwatch(wake, tps)
        response, total, errors = _read_all(broker, request, uses_ids)
        if total >= request.min_bytes or errors or broker.closing or loop.time() >= deadline:
            return response
        wake = purgatory.watch(tps)  # same loop step as the read: no lost wake-up


def _name(broker: Broker, topic: FetchRequest.FetchTopic, uses_ids: bool) -> str:
    if not uses_ids:
        return str(topic.topic)
    found = broker.topics.by_id(topic.topic_id)
    return found.name if found is not None else ""


def _read_all(
    broker: Broker, request: FetchRequest, uses_ids: bool
) -> tuple[FetchResponse, int, bool]:
    remaining = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
    total = 0
    errors = False
    topics = []
    for topic in request.topics:
        name = _name(broker, topic, uses_ids)
        parts = []
        for fp in topic.partitions:
            data, size = _read_partition(broker, name, uses_ids, fp, remaining, total == 0)
            if data.error_code != ErrorCode.NONE:
                errors = True
            total += size
            remaining = max(0, remaining - size)
            parts.append(data)
        topics.append(
            FetchResponse.FetchableTopicResponse(
                topic=name if not uses_ids else "",
                topic_id=topic.topic_id if uses_ids else _ZERO_UUID,
                partitions=parts,
            )
        )
    response = FetchResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics
    )
    return response, total, errors


def _read_partition(
    broker: Broker,
    name: str,
    uses_ids: bool,
    fp: FetchRequest.FetchPartition,
    remaining: int,
    first: bool,
) -> tuple[FetchResponse.PartitionData, int]:
    index = fp.partition
    try:
        if uses_ids and not name:
            raise UnknownTopicIdError("unknown topic id")
        plog = broker.topics.partition_log(name, index)
        limit = min(fp.partition_max_bytes, remaining)
        if limit <= 0 and not first:
            return _partition(
                index, ErrorCode.NONE, plog.high_watermark, plog.log_start_offset, b""
            ), 0
        result = plog.read(fp.fetch_offset, max(limit, 0), min_one_batch=first)
    except Exception as exc:
        code = error_code_for(exc)
        if code == ErrorCode.UNKNOWN_SERVER_ERROR:
            log.exception("fetch from %s-%d failed", name, index)
        return _partition(index, code, -1, -1, None), 0
    records = result.records
    return (
        _partition(index, ErrorCode.NONE, result.high_watermark, result.log_start_offset, records),
        len(records),
    )


def _partition(
    index: int, code: int, high_watermark: int, log_start_offset: int, records: Any
) -> FetchResponse.PartitionData:
    return FetchResponse.PartitionData(
        partition_index=index,
        error_code=code,
        high_watermark=high_watermark,
        last_stable_offset=high_watermark,
        log_start_offset=log_start_offset,
        aborted_transactions=None,
        preferred_read_replica=-1,
        records=records,
    )


_ZERO_UUID: Any = None
