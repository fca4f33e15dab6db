"""A handler result that holds back the requests behind it on the same connection.

Handlers run synchronously in arrival order (see :mod:`riverbed.broker.connection`), so a
request sees every state change made by the requests before it -- unless one of those
does its work later, on a worker thread (topic creation, deletion, new partitions,
config changes, DeleteRecords).
Such a handler returns ``Barrier(awaitable)``: the connection answers it like any other
awaitable, but dispatches nothing received after it until it completes, so a client that
pipelines CreateTopics then Produce on one connection still finds the topic.  Other
connections are not held: they see the change when it is published.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any


class Barrier:
    """``awaitable`` is the response; later requests on the connection wait for it."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable
