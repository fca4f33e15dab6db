"""The fetch purgatory: appends wake waiters on their partitions only, nothing leaks."""

from __future__ import annotations

import asyncio

from riverbed.broker.purgatory import FetchPurgatory


def test_notify_wakes_only_watchers_of_that_partition() -> None:
    async def scenario() -> None:
        purgatory = FetchPurgatory()
        a = purgatory.watch([("t", 0), ("t", 1)])
        b = purgatory.watch([("u", 0)])
        assert purgatory.waiting() == 2
        purgatory.notify(("t", 1))
        assert a.done() and not b.done()
        purgatory.unwatch(a, [("t", 0), ("t", 1)])
        assert purgatory.waiting() == 1
        purgatory.unwatch(b, [("u", 0)])
        assert b.cancelled()
        assert purgatory.waiting() == 0

    asyncio.run(scenario())


def test_notify_all_and_idempotent_notify() -> None:
    async def scenario() -> None:
        purgatory = FetchPurgatory()
        futures = [purgatory.watch([("t", i)]) for i in range(5)]
        purgatory.notify(("t", 9))  # nobody waits there
        purgatory.notify_all()
        await asyncio.wait_for(asyncio.gather(*futures), timeout=1)
        purgatory.notify(("t", 0))  # already woken: no error
        assert purgatory.waiting() == 0

    asyncio.run(scenario())
