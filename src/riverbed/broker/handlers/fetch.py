"""Fetch (key 1): serve stored batches, long-polling until ``min_bytes`` or ``max_wait_ms``.

Reads are the stored bytes as they are (no per-record work).  Limits: each partition
reads at most ``partition_max_bytes`` and the response at most ``max_bytes`` (itself
capped by the broker's ``fetch.max.bytes``, 55 MiB by default, as in Kafka), except
that the first non-empty partition always returns at least one whole batch (KIP-74), so
a consumer cannot get stuck behind a batch larger than its limits.

Long polling: when fewer than ``min_bytes`` are available, the fetch registers with the
:class:`~riverbed.broker.purgatory.FetchPurgatory` on all its partitions — in the same
event-loop step as the read, so no append can slip in between — and is woken by the next
append to any of them, re-reads, and answers once ``min_bytes`` is reached, the deadline
passes, or the broker shuts down.  A partition error answers at once.

Threads: names and logs are resolved on the event loop; a fetch whose limits allow more
than :data:`OFF_LOOP_READ_BYTES` reads on the loop's default executor (the storage layer
is thread-safe), so one big or cold read never stalls the other connections.  Smaller
fetches read inline (a page-cache pread of a few MiB costs less than a thread hop).

Fetch sessions are not kept: every response carries session id 0 (a full fetch each
time), which every client accepts.  Topic ids (v13+) resolve through the topic manager;
an unknown id is UNKNOWN_TOPIC_ID for that partition.

``isolation_level`` 1 (read_committed): each partition reads only below its last stable
offset and answers it with the aborted transactions overlapping the returned batches
(:meth:`PartitionLog.read`); read_uncommitted reads are unchanged (LSO = HW is answered
when no transaction is open).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import FetchDeps, ReadLog
from riverbed.errors import LogDeletedError, UnknownTopicIdError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import FetchRequest, FetchResponse
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.storage.transactions import IsolationLevel

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

API_KEY = 1
TOPIC_IDS_VERSION = 13
READ_COMMITTED = 1


# A fetch whose limits allow more than this many bytes reads on a worker thread: a big
# pread (a cold page cache, a slow disk) must not stall every other connection.
OFF_LOOP_READ_BYTES = 8 << 20


@dataclass(slots=True)
class _Target:
    """One requested partition, resolved on the event loop: its log or its error."""

    fp: FetchRequest.FetchPartition
    plog: ReadLog | None
    error: Exception | None


_Resolved = list[tuple[FetchRequest.FetchTopic, str, list[_Target]]]


def handle(
    deps: FetchDeps, ctx: RequestContext, request: FetchRequest
) -> FetchResponse | asyncio.Future[FetchResponse]:
    uses_ids = ctx.api_version >= TOPIC_IDS_VERSION
    cap = deps.config.fetch_max_bytes  # the broker's fetch.max.bytes, as Kafka applies it
    if request.max_bytes <= 0 or request.max_bytes > cap:
        request.max_bytes = cap
    off_loop = read_limit(request) > OFF_LOOP_READ_BYTES
    if off_loop:
        return asyncio.ensure_future(_fetch(deps, request, uses_ids, off_loop, None))
    response, total, errors = _read_all(_resolve(deps, request, uses_ids), request, uses_ids)
    if _complete(deps, request, total, errors):
        return response
    wake = deps.purgatory.watch(_tps(deps, request, uses_ids))
    return asyncio.ensure_future(_fetch(deps, request, uses_ids, off_loop, wake))


def read_limit(request: FetchRequest) -> int:
    """The most bytes ``request`` may read (before KIP-74's one oversized batch)."""
    per_partition = sum(max(p.partition_max_bytes, 0) for t in request.topics for p in t.partitions)
    return min(per_partition, request.max_bytes) if request.max_bytes > 0 else per_partition


def _complete(deps: FetchDeps, request: FetchRequest, total: int, errors: bool) -> bool:
    return (
        total >= request.min_bytes
        or request.max_wait_ms <= 0
        or errors
        or deps.closing
        or not request.topics
    )


def _tps(deps: FetchDeps, request: FetchRequest, uses_ids: bool) -> list[TopicPartition]:
    return [
        TopicPartition(_name(deps, t, uses_ids), p.partition)
        for t in request.topics
        for p in t.partitions
    ]


async def _fetch(
    deps: FetchDeps,
    request: FetchRequest,
    uses_ids: bool,
    off_loop: bool,
    wake: asyncio.Future[None] | None,
) -> FetchResponse:
    """Read (on a worker thread when ``off_loop``), long-polling until complete.

    The purgatory watch is always registered *before* the read that may find too little
    (in the same loop step for an inline read), so an append in between is never lost.
    """
    loop = asyncio.get_running_loop()
    purgatory = deps.purgatory
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    tps = _tps(deps, request, uses_ids)
    while True:
        if wake is not None:
            try:
                remaining = deadline - loop.time()
                if remaining > 0:
                    await asyncio.wait([wake], timeout=remaining)
            finally:
                purgatory.unwatch(wake, tps)
        resolved = _resolve(deps, request, uses_ids)
        if off_loop:
            wake = purgatory.watch(tps)
            try:
                response, total, errors = await loop.run_in_executor(
                    None, _read_all, resolved, request, uses_ids
                )
            except BaseException:
                purgatory.unwatch(wake, tps)
                raise
        else:
            response, total, errors = _read_all(resolved, request, uses_ids)
            wake = purgatory.watch(tps)  # same loop step as the read: no lost wake-up
        if _complete(deps, request, total, errors) or loop.time() >= deadline:
            purgatory.unwatch(wake, tps)
            return response


def _name(deps: FetchDeps, topic: FetchRequest.FetchTopic, uses_ids: bool) -> str:
    if not uses_ids:
        return str(topic.topic)
    found = deps.topics.by_id(topic.topic_id)
    return found.name if found is not None else ""


def _resolve(deps: FetchDeps, request: FetchRequest, uses_ids: bool) -> _Resolved:
    """Topic names and partition logs, looked up on the event loop (the topic table is
    loop-only state); the logs themselves are thread-safe to read."""
    out: _Resolved = []
    for topic in request.topics:
        name = _name(deps, topic, uses_ids)
        targets = []
        for fp in topic.partitions:
            try:
                if uses_ids and not name:
                    raise UnknownTopicIdError("unknown topic id")
                targets.append(_Target(fp, deps.topics.partition_log(name, fp.partition), None))
            except Exception as exc:
                targets.append(_Target(fp, None, exc))
        out.append((topic, name, targets))
    return out


def _read_all(
    resolved: _Resolved, request: FetchRequest, uses_ids: bool
) -> tuple[FetchResponse, int, bool]:
    """Read every resolved partition within the limits; safe on any thread."""
    remaining = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
    total = 0
    errors = False
    topics = []
    for topic, name, targets in resolved:
        parts = []
        for target in targets:
            data, size = _read_partition(
                name, target, remaining, total == 0, request.isolation_level, uses_ids
            )
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
    name: str,
    target: _Target,
    remaining: int,
    first: bool,
    isolation: int = 0,
    uses_ids: bool = False,
) -> tuple[FetchResponse.PartitionData, int]:
    """Read one partition; an error becomes that partition's error code.  A log whose
    topic was deleted after :func:`_resolve` found it (an off-loop read, or one racing the
    deletion's worker) answers as :func:`_resolve` would now: UNKNOWN_TOPIC_OR_PARTITION,
    or UNKNOWN_TOPIC_ID by topic id (v13+)."""
    fp = target.fp
    index = fp.partition
    try:
        if target.error is not None:
            raise target.error
        plog = target.plog
        assert plog is not None
        limit = min(fp.partition_max_bytes, remaining)
        if limit <= 0 and not first:
            return _partition(
                index, ErrorCode.NONE, plog.high_watermark, plog.log_start_offset, b""
            ), 0
        if isolation == READ_COMMITTED:
            return _read_committed(plog, fp, max(limit, 0), first)
        result = plog.read(fp.fetch_offset, max(limit, 0), min_one_batch=first)
    except Exception as exc:
        code = error_code_for(exc)
        if uses_ids and isinstance(exc, LogDeletedError):
            code = ErrorCode.UNKNOWN_TOPIC_ID
        if code == ErrorCode.UNKNOWN_SERVER_ERROR:
            log.exception("fetch from %s-%d failed", name, index)
        # Empty, not null, records: librdkafka refuses a null record set (as Kafka never
        # sends one) and the whole response fails to parse.
        return _partition(index, code, -1, -1, b""), 0
    records = result.records
    return (
        _partition(
            index,
            ErrorCode.NONE,
            result.high_watermark,
            result.log_start_offset,
            records,
            result.last_stable_offset,
        ),
        len(records),
    )


def _read_committed(
    plog: ReadLog, fp: FetchRequest.FetchPartition, limit: int, first: bool
) -> tuple[FetchResponse.PartitionData, int]:
    """isolation_level=1: nothing at or past the last stable offset, and the aborted
    transactions overlapping what is returned (the consumer drops their records)."""
    result = plog.read(
        fp.fetch_offset, limit, min_one_batch=first, isolation=IsolationLevel.READ_COMMITTED
    )
    aborted = [
        FetchResponse.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
        for a in result.aborted_transactions or ()
    ]
    data = _partition(
        fp.partition,
        ErrorCode.NONE,
        result.high_watermark,
        result.log_start_offset,
        result.records,
        result.last_stable_offset,
        aborted,
    )
    return data, len(result.records)


def _partition(
    index: int,
    code: int,
    high_watermark: int,
    log_start_offset: int,
    records: Any,
    last_stable_offset: int | None = None,
    aborted: list[FetchResponse.AbortedTransaction] | None = None,
) -> FetchResponse.PartitionData:
    return FetchResponse.PartitionData(
        partition_index=index,
        error_code=code,
        high_watermark=high_watermark,
        last_stable_offset=high_watermark if last_stable_offset is None else last_stable_offset,
        log_start_offset=log_start_offset,
        aborted_transactions=aborted,
        preferred_read_replica=-1,
        records=records,
    )


_ZERO_UUID: Any = None
