"""Produce's acks=-1 wait (issue 18.1): one loop future over all of a request's flush
futures, resolved once, with the first failure in request order."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

from riverbed.broker.handlers.produce import _all_done


def test_resolves_once_every_flush_is_done_from_other_threads() -> None:
    async def scenario() -> BaseException | None:
        flushes: list[concurrent.futures.Future[None]] = [
            concurrent.futures.Future() for _ in range(4)
        ]
        flushes[1].set_result(None)  # already durable
        waiter = _all_done(flushes)
        assert not waiter.done()
        threads = [
            threading.Thread(target=f.set_result, args=(None,)) for f in flushes if not f.done()
        ]
        for t in threads:
            t.start()
        result = await asyncio.wait_for(waiter, 60)
        for t in threads:
            t.join()
        return result

    assert asyncio.run(scenario()) is None


def test_first_failure_in_request_order() -> None:
    async def scenario() -> BaseException | None:
        flushes: list[concurrent.futures.Future[None]] = [
            concurrent.futures.Future() for _ in range(3)
        ]
        waiter = _all_done(flushes)
        flushes[2].set_exception(OSError(5, "late failure"))
        flushes[0].set_result(None)
        flushes[1].set_exception(OSError(28, "first failure"))
        return await asyncio.wait_for(waiter, 60)

    failure = asyncio.run(scenario())
    assert isinstance(failure, OSError) and failure.errno == 28


def test_all_done_already() -> None:
    async def scenario() -> BaseException | None:
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        done.set_result(None)
        waiter = _all_done([done])
        assert waiter.done()
        return await waiter

    assert asyncio.run(scenario()) is None


def test_cancelling_the_wait_leaves_the_flushes_alone() -> None:
    async def scenario() -> concurrent.futures.Future[None]:
        flush: concurrent.futures.Future[None] = concurrent.futures.Future()
        waiter = _all_done([flush])
        waiter.cancel()
        flush.set_result(None)  # the flush still resolves it; the late wake-up is ignored
        await asyncio.sleep(0)  # let the scheduled (ignored) resolution run
        return flush

    flush = asyncio.run(scenario())
    assert flush.done() and not flush.cancelled()
