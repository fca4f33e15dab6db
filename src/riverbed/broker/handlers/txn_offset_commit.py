"""TxnOffsetCommit (key 28): a consumer group's offsets, committed by a transaction.

The offsets are written to the group's ``__consumer_offsets`` partition as a
transactional batch (the answer waits for its fsync under a durable flush policy) and
held by the transaction service (:meth:`TransactionService.add_pending_offsets`) until
the transaction's marker there: COMMIT applies them to the group coordinator, ABORT drops
them, so OffsetFetch sees them exactly when the transaction commits.

v5 (transaction version 2, KIP-890) first adds the group's partition to the transaction
itself (the client sends no AddOffsetsToTxn), as the group coordinator's implicit
AddPartitionsToTxn does in Kafka; a coordinator busy with the previous transaction's
markers (CONCURRENT_TRANSACTIONS) first waits for them (at most ``MARKERS_WAIT_S``) and
runs again; still busy, it answers COORDINATOR_NOT_AVAILABLE, retriable, as Kafka's.
Checks, as Kafka's: partitions of unknown topics
answer UNKNOWN_TOPIC_OR_PARTITION; an unknown transactional id or another producer id
INVALID_PRODUCER_ID_MAPPING, an older epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v3), a transaction that is not Ongoing or did not add the group's offsets
(AddOffsetsToTxn) INVALID_TXN_STATE; v3+ (KIP-447) a generation of a classic group that
is not the group's ILLEGAL_GENERATION and a member it does not know UNKNOWN_MEMBER_ID; a
consumer group's member epoch as OffsetCommit's (an older epoch only for partitions
assigned at or before it, KIP-1251), answered ILLEGAL_GENERATION as Kafka 4.4 does below v6
(STALE_MEMBER_EPOCH from v6); a generation >= 0 for a group that does not exist
ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND from v6).
v6 (topic ids) is not served.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Awaitable
from typing import Protocol

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import GroupsPort, TopicNames, TransactionsPort
from riverbed.broker.handlers.txn_common import MARKERS_WAIT_S, legacy_code
from riverbed.broker.transactions import PendingOffset
from riverbed.coordinator import OFFSETS_TOPIC_NAME
from riverbed.coordinator.classic_group import ClassicGroup
from riverbed.coordinator.consumer_group import ConsumerGroup
from riverbed.coordinator.partitioning import partition_for
from riverbed.coordinator.transactions import TV_2, AddPartitionsToTxnRequest, TransactionState
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from riverbed.protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

API_KEY = 28
FENCED_VERSION = 3
MEMBER_VERSION = 3
LEADER_EPOCH_VERSION = 2
IMPLICIT_ADD_VERSION = 5  # KIP-890 part 2: the request also does AddOffsetsToTxn

Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
Partition = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition


class TxnOffsetCommitDeps(Protocol):
    @property
    def transactions(self) -> TransactionsPort: ...

    @property
    def groups(self) -> GroupsPort: ...

    @property
    def topics(self) -> TopicNames: ...


def handle(
    deps: TxnOffsetCommitDeps, ctx: RequestContext, request: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse | Awaitable[TxnOffsetCommitResponse]:
    if not deps.groups.ready:  # no FindCoordinator first: create __consumer_offsets now
        return _after_offsets_topic(deps, ctx, request)
    return _handle(deps, ctx, request, may_wait=True)


async def _after_offsets_topic(
    deps: TxnOffsetCommitDeps, ctx: RequestContext, request: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    await deps.groups.ensure_topic()
    answer = _handle(deps, ctx, request, may_wait=True)
    if isinstance(answer, TxnOffsetCommitResponse):
        return answer
    return await answer


def _handle(
    deps: TxnOffsetCommitDeps,
    ctx: RequestContext,
    request: TxnOffsetCommitRequest,
    may_wait: bool,
) -> TxnOffsetCommitResponse | Awaitable[TxnOffsetCommitResponse]:
    version = ctx.api_version
    flushes: tuple[concurrent.futures.Future[None], ...] = ()
    code = ErrorCode.NONE
    if version >= IMPLICIT_ADD_VERSION:
        code, flushes = _add_implicitly(deps, request)
        if (
            code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            and may_wait
            and deps.transactions.preparing(request.transactional_id)
        ):
            # the previous transaction's markers are being written: wait, then run again
            return _after_markers(deps, ctx, request)
        if flushes and may_wait:
            # the id's previous decision (CompleteCommit) is not durable yet: the offsets
            # are written only after it, then the implicit add is a no-op
            return _after_markers(deps, ctx, request, flushes)
    if code == ErrorCode.NONE:
        code = legacy_code(_check(deps, version, request), version, FENCED_VERSION)
    results: list[tuple[str, int, ErrorCode]] = []
    accepted: list[PendingOffset] = []
    for topic in request.topics:
        found = deps.topics.get(topic.name)
        for p in topic.partitions:
            if found is None or not 0 <= p.partition_index < found.partitions:
                results.append(
                    (topic.name, p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                )
                continue
            results.append((topic.name, p.partition_index, code))
            accepted.append(
                PendingOffset(
                    request.group_id,
                    topic.name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch if version >= LEADER_EPOCH_VERSION else -1,
                    p.committed_metadata or "",
                )
            )
    if code == ErrorCode.NONE and accepted:
        try:
            flushes += deps.transactions.add_pending_offsets(
                request.producer_id, request.producer_epoch, request.group_id, accepted
            )
        except Exception as exc:
            failed = error_code_for(exc)
            if failed == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.exception("TxnOffsetCommit of %s failed", request.group_id)
            results = [(n, i, failed if c == ErrorCode.NONE else c) for n, i, c in results]
    response = _encode(results)
    if flushes:
        return _after_flush(flushes, response, results)
    return response


async def _after_markers(
    deps: TxnOffsetCommitDeps,
    ctx: RequestContext,
    request: TxnOffsetCommitRequest,
    before: tuple[concurrent.futures.Future[None], ...] = (),
) -> TxnOffsetCommitResponse:
    for fut in before:
        await asyncio.wrap_future(fut)
    await deps.transactions.markers_done(request.transactional_id, MARKERS_WAIT_S)
    answer = _handle(deps, ctx, request, may_wait=False)
    if isinstance(answer, TxnOffsetCommitResponse):
        return answer
    return await answer


def _encode(results: list[tuple[str, int, ErrorCode]]) -> TxnOffsetCommitResponse:
    by_topic: dict[str, list[Partition]] = {}
    for name, index, c in results:
        by_topic.setdefault(name, []).append(Partition(partition_index=index, error_code=c))
    return TxnOffsetCommitResponse(
        throttle_time_ms=0,
        topics=[Topic(name=name, partitions=parts) for name, parts in by_topic.items()],
    )


async def _after_flush(
    flushes: tuple[concurrent.futures.Future[None], ...],
    response: TxnOffsetCommitResponse,
    results: list[tuple[str, int, ErrorCode]],
) -> TxnOffsetCommitResponse:
    """The answer once the offsets are durable; a failed fsync fails every partition."""
    try:
        for fut in flushes:
            await asyncio.wrap_future(fut)
    except Exception as exc:
        failed = error_code_for(exc)
        return _encode([(n, i, failed if c == ErrorCode.NONE else c) for n, i, c in results])
    return response


def _offsets_partition(deps: TxnOffsetCommitDeps, group_id: str) -> TopicPartition:
    return TopicPartition(
        OFFSETS_TOPIC_NAME,
        partition_for(group_id, deps.transactions.coordinator.config.offsets_topic_num_partitions),
    )


def _add_implicitly(
    deps: TxnOffsetCommitDeps, request: TxnOffsetCommitRequest
) -> tuple[ErrorCode, tuple[concurrent.futures.Future[None], ...]]:
    """v5+ (transaction version 2): the group's partition joins the transaction here, as
    the AddOffsetsToTxn the client no longer sends would have added it."""
    txns = deps.transactions
    req = AddPartitionsToTxnRequest(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        frozenset({_offsets_partition(deps, request.group_id)}),
        transaction_version=TV_2,
    )
    try:
        executed = txns.execute(lambda now: txns.coordinator.add_partitions_to_txn(req, now))
    except RiverbedError as exc:
        return error_code_for(exc), ()
    codes = {_implicit_add_code(c) for c in executed.response.errors.values()} - {ErrorCode.NONE}
    return (min(codes) if codes else ErrorCode.NONE), executed.flushes


_RETRIABLE_AS_COORDINATOR_NOT_AVAILABLE = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
    }
)


def _implicit_add_code(code: ErrorCode) -> ErrorCode:
    """What the implicit add's ``code`` answers TxnOffsetCommit v5+ with, as Kafka's: its
    AddPartitionsToTxnManager maps a busy transaction coordinator (CONCURRENT_TRANSACTIONS:
    the previous transaction's markers are still being written, right after EndTxn) to
    NOT_ENOUGH_REPLICAS and the group coordinator's ``normalizeException`` that to
    COORDINATOR_NOT_AVAILABLE, which clients retry.  Answered as is, CONCURRENT_TRANSACTIONS
    makes franz-go abort the transaction at the epoch EndTxn just bumped, which the
    coordinator (still PrepareCommit) refuses with PRODUCER_FENCED (TestTxnEtl)."""
    if code in _RETRIABLE_AS_COORDINATOR_NOT_AVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return code


def _check(deps: TxnOffsetCommitDeps, version: int, request: TxnOffsetCommitRequest) -> ErrorCode:
    """One code for the whole request (Kafka's validation order)."""
    try:
        meta = deps.transactions.query(
            lambda: deps.transactions.coordinator.transaction(request.transactional_id)
        )
    except Exception:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if meta is None or meta.producer_id != request.producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if request.producer_epoch < meta.producer_epoch:
        return ErrorCode.PRODUCER_FENCED
    offsets_tp = _offsets_partition(deps, request.group_id)
    if meta.state is not TransactionState.ONGOING or offsets_tp not in meta.partitions:
        return ErrorCode.INVALID_TXN_STATE
    if version >= MEMBER_VERSION:
        return _check_member(deps, request)
    return ErrorCode.NONE


def _check_member(deps: TxnOffsetCommitDeps, request: TxnOffsetCommitRequest) -> ErrorCode:
    return deps.groups.query(lambda: _member_error(deps, request))


def _member_error(deps: TxnOffsetCommitDeps, request: TxnOffsetCommitRequest) -> ErrorCode:
    """On the groups' thread: the member checks of TxnOffsetCommit v3+."""
    generation = request.generation_id_or_member_epoch
    member = request.member_id
    group = deps.groups.coordinator.group(request.group_id)
    if group is None:  # Kafka: GROUP_ID_NOT_FOUND from v6, which is not served
        return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
    if generation < 0 and not member:
        return ErrorCode.NONE
    if member and member not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if isinstance(group, ClassicGroup) and generation >= 0 and generation != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if isinstance(group, ConsumerGroup) and member and generation >= 0:
        partitions = ((t.name, p.partition_index) for t in request.topics for p in t.partitions)
        error = group.commit_error(member, generation, partitions)
        # STALE_MEMBER_EPOCH is answered from v6 (not served); below, ILLEGAL_GENERATION
        return ErrorCode.ILLEGAL_GENERATION if error is ErrorCode.STALE_MEMBER_EPOCH else error
    return ErrorCode.NONE
