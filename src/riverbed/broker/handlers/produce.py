"""Produce (key 0): append opaque record batches, acknowledge per ``acks``.

Per partition: resolve the log (UNKNOWN_TOPIC_OR_PARTITION), append the request's
``records`` bytes as they are — the storage layer validates headers and CRCs, assigns the
base offset and checks idempotent sequences — and wake long-poll fetches on that
partition.  ``acks``: 0 sends no response at all; 1 answers once the batch is in the
log; -1 (all) also waits for the log's flush future, i.e. durable under the topic's flush
policy (group commit: concurrent requests share an fsync; the event loop never blocks on
it).  A retry the log recognises as a duplicate waits for the flush covering the
original batch too, so it is never acknowledged before the original is durable.  Any
other value fails every existing partition with INVALID_REQUIRED_ACKS (unknown ones answer
UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID first, as in Kafka).  Errors are per
partition and mapped only through :func:`riverbed.errors.error_code_for`; one bad
partition never affects another.  Versions 0-2 are advertised but refused
(see :mod:`.api_versions`).

Transactional batches (a request with a ``transactional_id``) are first checked with the
transaction coordinator (KIP-890): a partition the transaction has not added is refused
(TRANSACTION_ABORTABLE, INVALID_TXN_STATE below v11) and nothing is written there; from
v12 (transaction version 2) the partition is added implicitly instead.  Requests without a
transactional id skip this entirely.

A transactional Produce that arrives while its transactional id's previous transaction is
still writing its markers (the coordinator busy: NOT_ENOUGH_REPLICAS on the wire) is not
answered at once: it waits for the markers (at most
:data:`~riverbed.broker.handlers.txn_common.MARKERS_WAIT_S`, on the loop, never blocking
it) and runs once more, as Kafka's partition leader retries the verification; a client
then avoids its retry backoff (Java: ``retry.backoff.ms``, 100 ms).  Such a request is a
:class:`~riverbed.broker.barrier.Barrier`: the frames behind it on its connection wait, so
a producer's pipelined batches are still appended in their sequence order.  So is an
implicit add (v12) whose transactional id's previous decision (the last transaction's
CompleteCommit) is not durable yet: it waits for that fsync before appending its data
(the new transaction's own Ongoing record is not waited for: see
:mod:`riverbed.coordinator.transactions.orphans`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading

from riverbed.broker.barrier import Barrier
from riverbed.broker.context import RequestContext
from riverbed.broker.handlers.deps import ProduceDeps
from riverbed.broker.handlers.txn_common import MARKERS_WAIT_S
from riverbed.errors import (
    InvalidRecordError,
    InvalidRequiredAcksError,
    RiverbedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ProduceRequest, ProduceResponse
from riverbed.protocol.topic_partition import TopicPartition

log = logging.getLogger(__name__)

API_KEY = 0
MIN_ACCEPTED_VERSION = 3
TOPIC_IDS_VERSION = 13
IMPLICIT_ADD_VERSION = 12  # KIP-890 part 2: transaction version 2 producers

PartitionResponse = ProduceResponse.PartitionProduceResponse


Answer = ProduceResponse | asyncio.Future[ProduceResponse] | None


def handle(deps: ProduceDeps, ctx: RequestContext, request: ProduceRequest) -> Answer | Barrier:
    return _handle(deps, ctx, request, may_wait=True)


def _handle(
    deps: ProduceDeps, ctx: RequestContext, request: ProduceRequest, may_wait: bool
) -> Answer | Barrier:
    acks = request.acks
    version = ctx.api_version
    acks_error = (
        None if acks in (0, 1, -1) else InvalidRequiredAcksError(f"acks={acks} is not 0, 1 or -1")
    )
    flushes: list[concurrent.futures.Future[None]] = []
    refused: dict[TopicPartition, ErrorCode] = {}
    transactional_id = request.transactional_id
    if transactional_id is not None and acks_error is None:
        verified: list[concurrent.futures.Future[None]] = []
        refused = _verify_transaction(deps, request, version, verified)
        if may_wait and (
            verified  # an implicit add whose id's previous decision is not durable yet
            or (
                ErrorCode.NOT_ENOUGH_REPLICAS in refused.values()
                and deps.transactions.preparing(transactional_id)
            )
        ):
            return Barrier(_after_markers(deps, ctx, request, transactional_id, verified))
        if acks == -1:
            flushes.extend(verified)
    responses = []
    for topic_data in request.topic_data:
        name = topic_data.name if version < TOPIC_IDS_VERSION else None
        topic_error: Exception | None = acks_error
        if version >= TOPIC_IDS_VERSION:
            topic = deps.topics.by_id(topic_data.topic_id)
            if topic is None:
                topic_error = topic_error or UnknownTopicIdError("unknown topic id")
                name = ""
            else:
                name = topic.name
        assert name is not None
        partitions = []
        for data in topic_data.partition_data:
            code = refused.get(TopicPartition(name, data.index))
            partitions.append(
                _append(
                    deps,
                    name,
                    data,
                    topic_error or _txn_error(code),
                    flushes if acks == -1 else None,
                )
            )
        responses.append(
            ProduceResponse.TopicProduceResponse(
                name=name, topic_id=topic_data.topic_id, partition_responses=partitions
            )
        )
    if acks == 0:
        return None
    response = ProduceResponse(responses=responses, throttle_time_ms=0)
    if not flushes:
        return response
    return asyncio.ensure_future(_after_flush(response, flushes))


def _append(
    deps: ProduceDeps,
    name: str,
    data: ProduceRequest.PartitionProduceData,
    error: Exception | None,
    flushes: list[concurrent.futures.Future[None]] | None,
) -> PartitionResponse:
    index = data.index
    try:
        if isinstance(error, UnknownTopicIdError):
            raise error
        # Kafka checks that the partition exists before it looks at acks.
        plog = deps.topics.partition_log(name, index)
        if error is not None:
            raise error
        records = data.records
        if not records:
            raise InvalidRecordError("produce request without records")
        result = plog.append(records)
    except (UnknownTopicOrPartitionError, UnknownTopicIdError) as exc:
        return _error(index, exc)
    except Exception as exc:
        if error_code_for(exc) == ErrorCode.UNKNOWN_SERVER_ERROR:
            log.exception("append to %s-%d failed", name, index)
        return _error(index, exc)
    deps.purgatory.notify(TopicPartition(name, index))
    if flushes is not None:
        # A retried batch (duplicate) answers with the original's offsets, so it must
        # also wait for the fsync covering the original: that may still be in flight.
        flushes.append(plog.flush_future(result.last_offset))
    return PartitionResponse(
        index=index,
        error_code=ErrorCode.NONE,
        base_offset=result.base_offset,
        log_append_time_ms=result.log_append_time_ms,
        log_start_offset=result.log_start_offset,
        record_errors=[],
        error_message=None,
    )


class TransactionVerificationError(RiverbedError):
    """A transactional batch for a partition its transaction has not added (KIP-890),
    or whose producer the coordinator fenced: the code the coordinator gave."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(f"transaction verification failed: {code.name}")
        self.error_code = code


def _txn_error(code: ErrorCode | None) -> Exception | None:
    if code is None or code == ErrorCode.NONE:
        return None
    return TransactionVerificationError(code)


def _verify_transaction(
    deps: ProduceDeps,
    request: ProduceRequest,
    version: int,
    flushes: list[concurrent.futures.Future[None]] | None,
) -> dict[TopicPartition, ErrorCode]:
    """Ask the transaction coordinator whether every partition with a transactional batch
    is in the producer's transaction (Produce v12+: add it, transaction version 2)."""
    tps: list[TopicPartition] = []
    producer: tuple[int, int] | None = None
    for topic_data in request.topic_data:
        if version >= TOPIC_IDS_VERSION:
            topic = deps.topics.by_id(topic_data.topic_id)
            if topic is None:
                continue
            name = topic.name
        else:
            name = topic_data.name
        for data in topic_data.partition_data:
            records = data.records
            if not records or len(records) < HEADER_SIZE:
                continue
            header = BatchHeader.parse(records)
            if not header.is_transactional:
                continue
            producer = producer or (header.producer_id, header.producer_epoch)
            tps.append(TopicPartition(name, data.index))
    if producer is None or request.transactional_id is None:
        return {}
    verdict = deps.transactions.verify_produce(
        request.transactional_id,
        producer[0],
        producer[1],
        tps,
        version >= IMPLICIT_ADD_VERSION,
        version,
    )
    if flushes is not None:
        flushes.extend(verdict.flushes)
    return dict(verdict.errors)


async def _after_markers(
    deps: ProduceDeps,
    ctx: RequestContext,
    request: ProduceRequest,
    transactional_id: str,
    verified: list[concurrent.futures.Future[None]],
) -> ProduceResponse | None:
    """Wait for ``transactional_id``'s markers (bounded), then handle ``request`` again;
    a coordinator still busy then answers NOT_ENOUGH_REPLICAS, which the client retries."""
    for fut in verified:  # whatever the busy verification wrote is durable first
        await asyncio.wrap_future(fut)
    await deps.transactions.markers_done(transactional_id, MARKERS_WAIT_S)
    answer = _handle(deps, ctx, request, may_wait=False)
    assert not isinstance(answer, Barrier)
    if isinstance(answer, asyncio.Future):
        return await answer
    return answer


def _error(index: int, exc: Exception) -> PartitionResponse:
    return PartitionResponse(
        index=index,
        error_code=error_code_for(exc),
        base_offset=-1,
        log_append_time_ms=-1,
        log_start_offset=-1,
        record_errors=[  # the records at fault; the others fail as collateral, as in Kafka
            ProduceResponse.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
            for i, m in (exc.record_errors if isinstance(exc, InvalidRecordError) else ())
        ],
        error_message=str(exc),
    )


async def _after_flush(
    response: ProduceResponse, flushes: list[concurrent.futures.Future[None]]
) -> ProduceResponse:
    failure = await _all_done(flushes)
    if failure is not None:
        # An fsync failed: the data may not be durable, so fail every partition of this
        # request rather than acknowledge it.
        code = error_code_for(failure)
        for topic in response.responses:
            for part in topic.partition_responses:
                if part.error_code == ErrorCode.NONE:
                    part.error_code = code
                    part.error_message = str(failure) or "flush failed"  # names file and errno
                    part.base_offset = -1
    return response


def _all_done(
    flushes: list[concurrent.futures.Future[None]],
) -> asyncio.Future[BaseException | None]:
    """A loop future resolved once every flush future is done: with the first failure
    in ``flushes``' order, or None.  One wake-up of the loop per request (the last flush
    to finish schedules it), where a ``wrap_future`` per partition woke it per flush.
    Cancelling it (the client left) leaves the flush futures alone: the flush that covers
    them resolves them as usual."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[BaseException | None] = loop.create_future()
    pending = [f for f in flushes if not f.done()]
    if not pending:
        waiter.set_result(_first_failure(flushes))
        return waiter
    left = [len(pending)]
    lock = threading.Lock()

    def one_done(_done: concurrent.futures.Future[None]) -> None:
        with lock:
            left[0] -= 1
            if left[0]:
                return
        if not loop.is_closed():  # as asyncio's wrap_future: a closed loop hears nothing
            loop.call_soon_threadsafe(_resolve, waiter, flushes)

    for fut in pending:
        fut.add_done_callback(one_done)
    return waiter


def _resolve(
    waiter: asyncio.Future[BaseException | None], flushes: list[concurrent.futures.Future[None]]
) -> None:
    if not waiter.done():
        waiter.set_result(_first_failure(flushes))


def _first_failure(flushes: list[concurrent.futures.Future[None]]) -> BaseException | None:
    for fut in flushes:
        exc = concurrent.futures.CancelledError() if fut.cancelled() else fut.exception()
        if exc is not None:
            return exc
    return None
