"""ShareFetch (key 78, v1-2): acquire records for a share group member (KIP-932).

One request, in order:

1. the share session (:mod:`riverbed.broker.share_sessions`): epoch 0 opens it with the
   request's partitions, -1 closes it, any other epoch must be the session's next and
   adds the request's partitions and drops the forgotten ones; a mismatch is a top-level
   SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH;
2. piggy-backed acknowledgements are applied per partition (AcknowledgeErrorCode) and
   appended to ``__share_group_state``; the answer waits for their fsyncs;
3. epoch -1: the session is closed and the member's remaining locks in it released,
   nothing is fetched;
4. otherwise every partition of the session is read from its share partition's next
   fetch offset (whole batches, up to the high watermark, within ``max_bytes``) and its
   deliverable offsets acquired for the member (``max_records`` in all; control batches
   are archived as gaps, and so are aborted transactions' batches under the group's
   ``share.isolation.level=read_committed``, which reads only below the last stable
   offset); the response carries the batches overlapping what was acquired
   and the ``AcquiredRecords`` ranges with their delivery counts (the client drops the
   other records of those batches).  ``AcquisitionLockTimeoutMs`` is the group's lock
   duration.
5. Long polling, as Kafka's DelayedShareFetch: records are acquired once the deliverable
   batches read add up to ``min_bytes`` (at least one record); until then, up to
   ``max_wait_ms``, the request waits on the :class:`~riverbed.broker.purgatory.
   FetchPurgatory` for an append to, or a release in, one of its partitions (registered
   before each read, so no wake-up is lost), and at the deadline acquires what there
   is.  A request whose share session closed while it waited (its connection dropped)
   acquires nothing.

Reads are disk I/O: they run on the loop's default executor (one hop for all partitions);
the share partitions are touched only on the loop.  v2 adds ``ShareAcquireMode``
(record_limit: ``max_records`` is a hard limit, which acquisition honours in both modes)
and RENEW acknowledgements (``IsRenewAck``: the lock is extended and nothing is fetched).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.share_common import (
    ShareFetchDeps,
    ack_batches,
    leader,
    top_level_error,
)
from riverbed.broker.share_sessions import (
    FINAL_EPOCH,
    ShareSession,
    ShareSessionCache,
    ShareSessionError,
)
from riverbed.errors import error_code_for
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ShareFetchRequest, ShareFetchResponse
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.share.share_partition import AcquiredRecords
from riverbed.storage.log import PartitionLog
from riverbed.storage.transactions import IsolationLevel

log = logging.getLogger(__name__)

API_KEY = 78
DEFAULT_MAX_RECORDS = 500
Resp = ShareFetchResponse


@dataclass(slots=True)
class _Partition:
    """One partition of the answer."""

    topic_id: uuid.UUID
    tp: TopicPartition
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    ack_code: ErrorCode = ErrorCode.NONE
    ack_message: str | None = None
    records: bytes = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)


@dataclass(slots=True)
class _Read:
    """A planned read: where, and what it found (filled on the worker thread)."""

    part: _Partition
    plog: PartitionLog
    offset: int
    limit: int
    end: int
    read_committed: bool = False
    data: bytes = b""
    batches: list[tuple[int, int, int, int, bool]] = field(default_factory=list)
    """(base offset, last offset, position, size, skipped) of each whole batch; skipped:
    a control batch, or (read_committed) a batch of an aborted transaction."""
    error: Exception | None = None


def handle(
    deps: ShareFetchDeps, ctx: RequestContext, request: ShareFetchRequest
) -> asyncio.Future[ShareFetchResponse]:
    return asyncio.ensure_future(_share_fetch(deps, ctx, request))


async def _share_fetch(
    deps: ShareFetchDeps, ctx: RequestContext, request: ShareFetchRequest
) -> ShareFetchResponse:
    shares = deps.share_groups
    problem = top_level_error(shares.closed, request.group_id, request.member_id)
    if problem is not None:
        return _error(problem[0], problem[1])
    group_id, member_id = str(request.group_id), str(request.member_id)
    try:
        await shares.partitions.ensure_topic()
    except Exception as exc:
        return _error(error_code_for(exc), str(exc))
    parts: dict[TopicPartition, _Partition] = {}
    acks: dict[TopicPartition, list[tuple[int, int, list[int]]]] = {}
    added: list[TopicPartition] = []
    for topic in request.topics:
        found = deps.topics.by_id(topic.topic_id)
        for fp in topic.partitions:
            if found is None:
                tp = TopicPartition(f"<unknown {topic.topic_id}>", fp.partition_index)
                parts[tp] = _Partition(topic.topic_id, tp, ErrorCode.UNKNOWN_TOPIC_ID)
                continue
            tp = TopicPartition(found.name, fp.partition_index)
            part = parts[tp] = _Partition(topic.topic_id, tp)
            if not 0 <= fp.partition_index < found.partitions:
                part.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            added.append(tp)
            if fp.acknowledgement_batches:
                acks[tp] = ack_batches(fp.acknowledgement_batches)
    forgotten = []
    for ft in request.forgotten_topics_data:
        found = deps.topics.by_id(ft.topic_id)
        if found is not None:
            forgotten += [TopicPartition(found.name, p) for p in ft.partitions]
    epoch = request.share_session_epoch
    try:
        session = shares.sessions.fetch_session(
            group_id, member_id, epoch, added, forgotten, ctx.connection_id
        )
    except ShareSessionError as exc:
        return _error(exc.error_code, str(exc))
    flushes: list[concurrent.futures.Future[None]] = []
    for tp, batches in acks.items():
        done = shares.partitions.acknowledge(group_id, member_id, tp, batches)
        parts[tp].ack_code, parts[tp].ack_message = done.error_code, done.error_message
        flushes += done.flushes
    renew_only = bool(getattr(request, "is_renew_ack", False))
    if epoch == FINAL_EPOCH:
        closed = shares.sessions.close(group_id, member_id)
        if closed is not None:
            flushes += shares.partitions.release_member_in(group_id, member_id, closed.partitions)
    elif not renew_only:
        for tp in session.partitions:
            if tp not in parts:
                known = deps.topics.get(tp.topic)
                if known is not None:
                    parts[tp] = _Partition(known.topic_id, tp)
        tps = list(session.partitions)
        if tps:  # start each fetch at another partition: max_records never starves one
            k = session.next_epoch % len(tps)
            tps = tps[k:] + tps[:k]
        alive = partial(_same_session, shares.sessions, group_id, member_id, session)
        await _acquire_long_poll(deps, request, group_id, member_id, parts, tps, alive)
    for fut in flushes:
        await asyncio.wrap_future(fut)
    lock_ms = shares.partitions.partition_config(group_id).record_lock_duration_ms
    return _encode(deps, parts.values(), lock_ms)


async def _acquire_long_poll(
    deps: ShareFetchDeps,
    request: ShareFetchRequest,
    group_id: str,
    member_id: str,
    parts: dict[TopicPartition, _Partition],
    tps: list[TopicPartition],
    alive: Callable[[], bool],
) -> None:
    """Acquire now if ``min_bytes`` are deliverable, else wait (up to ``max_wait_ms``)
    for an append or a release and look again; at the deadline acquire what there is.
    Stops without acquiring once the session is gone (closed by its connection
    dropping while this request waited): nothing is locked for a member that cannot
    receive it."""
    loop = asyncio.get_running_loop()
    purgatory = deps.purgatory
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    max_records = getattr(request, "max_records", 0) or DEFAULT_MAX_RECORDS
    max_bytes = request.max_bytes if request.max_bytes > 0 else 0x7FFFFFFF
    min_bytes = max(request.min_bytes, 1)
    while True:
        wake = purgatory.watch(tps)  # before the read: an append in between still wakes
        try:
            if not alive():
                return
            got = await _acquire_once(
                deps, group_id, member_id, parts, tps, max_records, max_bytes, min_bytes, alive
            )
            remaining = deadline - loop.time()
            if got or remaining <= 0 or deps.closing or deps.share_groups.closed:
                if not got and remaining <= 0 and alive():  # the deadline: take what is there
                    await _acquire_once(
                        deps, group_id, member_id, parts, tps, max_records, max_bytes, 1, alive
                    )
                return
            await asyncio.wait([wake], timeout=remaining)
            if loop.time() >= deadline and alive():
                # one last look: the deadline passed while waiting
                await _acquire_once(
                    deps, group_id, member_id, parts, tps, max_records, max_bytes, 1, alive
                )
                return
        finally:
            purgatory.unwatch(wake, tps)


def _same_session(
    sessions: ShareSessionCache, group_id: str, member_id: str, session: ShareSession
) -> bool:
    return sessions.get(group_id, member_id) is session


async def _acquire_once(
    deps: ShareFetchDeps,
    group_id: str,
    member_id: str,
    parts: dict[TopicPartition, _Partition],
    tps: list[TopicPartition],
    max_records: int,
    max_bytes: int,
    min_bytes: int,
    alive: Callable[[], bool],
) -> int:
    """Plan reads on the loop, read on a worker, acquire on the loop; records acquired.
    Nothing is acquired when fewer than ``min_bytes`` of deliverable batches were read
    (Kafka's DelayedShareFetch: min bytes unsatisfied, keep waiting), or when the
    session closed during the read."""
    shares = deps.share_groups.partitions
    reads: list[_Read] = []
    budget = max_bytes
    for tp in tps:
        part = parts.get(tp)
        if part is None or part.error_code != ErrorCode.NONE or part.acquired:
            continue
        try:
            plog = deps.topics.partition_log(tp.topic, tp.partition)
        except Exception as exc:
            part.error_code = error_code_for(exc)
            continue
        sp = shares.get_or_create(group_id, tp, plog)
        if plog.log_start_offset > sp.start_offset:
            shares.advance_start_offset(group_id, tp, plog.log_start_offset)
        offset = sp.next_fetch_offset()
        end = plog.high_watermark
        committed = sp.config.isolation_level == "read_committed"
        if committed:
            end = min(end, plog.last_stable_offset)
        if offset >= end:
            continue
        reads.append(_Read(part, plog, offset, budget, end, committed))
    if not reads:
        return 0
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, _read_all, reads)
    if not alive():
        return 0
    if min_bytes > 1:
        readable = sum(
            size for rd in reads for _b, _l, _pos, size, skipped in rd.batches if not skipped
        )
        if readable < min_bytes and not any(rd.error is not None for rd in reads):
            return 0
    total = 0
    for rd in reads:
        part = rd.part
        if rd.error is not None:
            part.error_code = error_code_for(rd.error)
            part.error_message = str(rd.error)
            continue
        if total >= max_records:
            break
        batches = [(b, last) for b, last, _pos, _size, skipped in rd.batches if not skipped]
        if not batches:
            continue  # only skipped batches: archived as a gap once data follows them
        result = shares.acquire(group_id, member_id, part.tp, batches, max_records - total)
        part.acquired = list(result.acquired)
        if not part.acquired:
            continue
        total += sum(a.last_offset - a.first_offset + 1 for a in part.acquired)
        part.records = _overlapping(rd, part.acquired)
    return total


def _read_all(reads: list[_Read]) -> None:
    """Read every planned partition (a worker thread: the logs are thread-safe)."""
    budget = reads[0].limit if reads else 0
    for i, rd in enumerate(reads):
        if budget <= 0 and i:
            break
        isolation = (
            IsolationLevel.READ_COMMITTED if rd.read_committed else IsolationLevel.READ_UNCOMMITTED
        )
        try:
            result = rd.plog.read(
                rd.offset, max(budget, 0), min_one_batch=True, isolation=isolation
            )
        except Exception as exc:
            rd.error = exc
            continue
        aborted = result.aborted_transactions or ()
        data = result.records
        rd.data = data
        pos, n = 0, len(data)
        while pos + HEADER_SIZE <= n:
            header = BatchHeader.parse(data, pos)
            if pos + header.size > n or header.last_offset >= rd.end:
                break
            if header.last_offset >= rd.offset:
                skipped = header.is_control or (
                    header.is_transactional
                    and any(
                        a.producer_id == header.producer_id
                        and a.first_offset <= header.base_offset <= a.last_offset
                        for a in aborted
                    )
                )
                rd.batches.append(
                    (header.base_offset, header.last_offset, pos, header.size, skipped)
                )
            pos += header.size
        budget -= pos


def _overlapping(rd: _Read, acquired: list[AcquiredRecords]) -> bytes:
    """The batches of ``rd`` that hold at least one acquired offset, in log order."""
    out = []
    view = memoryview(rd.data)
    for base, last, pos, size, skipped in rd.batches:
        if skipped:
            continue
        if any(a.first_offset <= last and base <= a.last_offset for a in acquired):
            out.append(view[pos : pos + size])
    return b"".join(out)


def _encode(deps: ShareFetchDeps, parts: Iterable[_Partition], lock_ms: int) -> ShareFetchResponse:
    by_topic: dict[uuid.UUID, list[Resp.PartitionData]] = {}
    node = leader(deps)
    for part in parts:
        by_topic.setdefault(part.topic_id, []).append(
            Resp.PartitionData(
                partition_index=part.tp.partition,
                error_code=part.error_code,
                error_message=part.error_message,
                acknowledge_error_code=part.ack_code,
                acknowledge_error_message=part.ack_message,
                current_leader=Resp.LeaderIdAndEpoch(leader_id=node, leader_epoch=0),
                records=part.records,
                acquired_records=[
                    Resp.AcquiredRecords(
                        first_offset=a.first_offset,
                        last_offset=a.last_offset,
                        delivery_count=a.delivery_count,
                    )
                    for a in part.acquired
                ],
            )
        )
    return ShareFetchResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        acquisition_lock_timeout_ms=lock_ms,
        responses=[
            Resp.ShareFetchableTopicResponse(topic_id=topic_id, partitions=partitions)
            for topic_id, partitions in by_topic.items()
        ],
        node_endpoints=[],
    )


def _error(code: ErrorCode, message: str | None) -> ShareFetchResponse:
    return ShareFetchResponse(
        throttle_time_ms=0,
        error_code=code,
        error_message=message,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )
