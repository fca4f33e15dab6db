"""What the TransactionService tests share (test_transaction_service*.py): the broker
parts the service uses (:class:`Host`, :class:`GroupsHost` for its GroupService) and a
coroutine that waits on a condition against a deadline.

Imported by module name (this directory is on ``sys.path`` under pytest's default
``prepend`` import mode, as ``tests/unit/storage/_batches.py`` is)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from riverbed.broker.config import BrokerConfig
from riverbed.broker.groups import GroupService
from riverbed.broker.purgatory import FetchPurgatory
from riverbed.broker.topics import TopicManager
from riverbed.clock import ManualClock

PROPS = {"offsets.topic.num.partitions": "3"}


@dataclass
class Host:
    """The parts of a broker TransactionService uses (:class:`TransactionHost`)."""

    topics: TopicManager
    groups: GroupService
    config: BrokerConfig = field(default_factory=lambda: BrokerConfig.from_props(PROPS))
    clock: ManualClock = field(default_factory=ManualClock)
    purgatory: FetchPurgatory = field(default_factory=FetchPurgatory)


@dataclass
class GroupsHost:
    """The parts of a broker the GroupService of a :class:`Host` uses."""

    topics: TopicManager
    config: BrokerConfig
    clock: ManualClock = field(default_factory=ManualClock)
    purgatory: FetchPurgatory = field(default_factory=FetchPurgatory)


async def until(
    condition: Callable[[], bool], what: str = "condition not met in time", timeout_s: float = 30
) -> None:
    """Return once ``condition()`` is true, polling every 10 ms on the running loop (which
    keeps serving the service's callbacks meanwhile); fail the test naming ``what`` once
    ``timeout_s`` has passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.01)
