"""Delayed operations ("purgatory"): long-poll fetches wait here for data to arrive.

A waiting Fetch registers one :class:`asyncio.Future` under every partition it reads
(``watch``); an append calls :meth:`FetchPurgatory.notify` for its partition, which
completes every future registered there and forgets them.  The waiter then re-reads and
either answers or waits again for the rest of its ``max_wait_ms``.  There is no polling:
a consumer wakes within one event-loop iteration of the append.  Topic deletion and
broker shutdown call :meth:`notify_all` so nobody waits on a partition that is gone.

Event-loop only (not thread-safe).  Nothing here is persisted: a crash drops the waiting
fetches along with their connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from riverbed.protocol.topic_partition import TopicPartition


class FetchPurgatory:
    """Per-partition wake-ups for long-poll fetches."""

    def __init__(self) -> None:
        self._watchers: dict[TopicPartition, set[asyncio.Future[None]]] = {}

    def watch(self, partitions: Iterable[TopicPartition]) -> asyncio.Future[None]:
        """A future completed by the next :meth:`notify` of any of ``partitions``.

        The caller must :meth:`unwatch` it when done (whether or not it fired).
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for tp in partitions:
            self._watchers.setdefault(tp, set()).add(future)
        return future

    def unwatch(self, future: asyncio.Future[None], partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            waiting = self._watchers.get(tp)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del self._watchers[tp]
        if not future.done():
            future.cancel()

    def notify(self, tp: TopicPartition) -> None:
        """Wake every fetch waiting on ``tp`` (called after an append)."""
        waiting = self._watchers.pop(tp, None)
        if waiting:
            for future in waiting:
                if not future.done():
                    future.set_result(None)

    def notify_all(self) -> None:
        for tp in list(self._watchers):
            self.notify(tp)

    def waiting(self) -> int:
        """Number of distinct pending futures (for tests and metrics)."""
        return len({f for fs in self._watchers.values() for f in fs})
