"""What the transaction API adapters share: calling the coordinator, version mappings.

Every transaction handler decodes its request into a
:mod:`riverbed.coordinator.transactions` value, calls
:meth:`TransactionService.execute` synchronously (calls reach the coordinator in arrival
order) and answers once the records it wrote are durable (under a durable flush policy),
except an Ongoing record, answered once appended (see
:meth:`~riverbed.broker.transactions.TransactionService._append`).
A service that is not available (``__transaction_state`` not created, broker stopping)
answers COORDINATOR_NOT_AVAILABLE, so the client looks the coordinator up again.
PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH to request versions that predate
it, as Kafka's responses do.  Event-loop only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TypeVar

from riverbed.broker.handlers.deps import TransactionsPort
from riverbed.coordinator.transactions import TxnReply
from riverbed.errors import RiverbedError, error_code_for
from riverbed.protocol.error_codes import ErrorCode

R = TypeVar("R")
W = TypeVar("W")


def legacy_code(code: ErrorCode, version: int, fenced_from: int) -> ErrorCode:
    """``code`` for a request ``version``: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH
    below ``fenced_from`` (InitProducerId 4, AddPartitions/AddOffsets/EndTxn 2,
    TxnOffsetCommit 3)."""
    if code == ErrorCode.PRODUCER_FENCED and version < fenced_from:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def call(
    txns: TransactionsPort,
    handler: Callable[[int], TxnReply[R]],
    encode: Callable[[R], W],
    error: Callable[[ErrorCode], W],
) -> W | Awaitable[W]:
    """Run one coordinator call; the answer waits for the fsyncs covering its records."""
    try:
        executed = txns.execute(handler)
    except RiverbedError as exc:
        code = error_code_for(exc)
        if code != ErrorCode.COORDINATOR_NOT_AVAILABLE:
            raise
        return error(code)
    if executed.flushes:
        return _after_flush(executed.flushes, encode(executed.response))
    return encode(executed.response)


MARKERS_WAIT_S = 0.5
"""How long a request answered CONCURRENT_TRANSACTIONS waits for the previous
transaction's markers before it is answered so (the markers normally take milliseconds;
a failed marker write is retried every second)."""


def call_after_markers(
    txns: TransactionsPort,
    transactional_id: str,
    handler: Callable[[int], TxnReply[R]],
    busy: Callable[[R], bool],
    encode: Callable[[R], W],
    error: Callable[[ErrorCode], W],
) -> W | Awaitable[W]:
    """:func:`call`, except that an answer ``busy`` (CONCURRENT_TRANSACTIONS) given while
    the id's previous transaction is still writing its markers is not sent: the request
    waits for the markers (at most :data:`MARKERS_WAIT_S`) and runs once more, as the
    client's retry would.  What the busy call wrote (InitProducerId fencing an Ongoing
    transaction: its PrepareAbort) is durable before the wait."""
    try:
        executed = txns.execute(handler)
    except RiverbedError as exc:
        code = error_code_for(exc)
        if code != ErrorCode.COORDINATOR_NOT_AVAILABLE:
            raise
        return error(code)
    if busy(executed.response) and txns.preparing(transactional_id):
        return _after_markers(txns, transactional_id, executed.flushes, handler, encode, error)
    if executed.flushes:
        return _after_flush(executed.flushes, encode(executed.response))
    return encode(executed.response)


async def _after_markers(
    txns: TransactionsPort,
    transactional_id: str,
    flushes: tuple[concurrent.futures.Future[None], ...],
    handler: Callable[[int], TxnReply[R]],
    encode: Callable[[R], W],
    error: Callable[[ErrorCode], W],
) -> W:
    for fut in flushes:  # what the busy call wrote (InitProducerId's fencing abort)
        await asyncio.wrap_future(fut)
    await txns.markers_done(transactional_id, MARKERS_WAIT_S)
    answer = call(txns, handler, encode, error)
    if isinstance(answer, Awaitable):
        return await answer
    return answer


async def _after_flush(flushes: tuple[concurrent.futures.Future[None], ...], answer: W) -> W:
    for fut in flushes:
        await asyncio.wrap_future(fut)
    return answer
