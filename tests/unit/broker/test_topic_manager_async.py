"""Topic changes off the event loop: the worker thread does the disk work, the loop keeps
running, visibility is atomic, and ``topics.json`` never loses a pending change; the
synchronous API is the asynchronous one run to completion."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from riverbed.broker.config import BrokerConfig
from riverbed.broker.topics import TopicManager
from riverbed.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from riverbed.storage.config import LogConfig
from riverbed.storage.log import PartitionLog
from riverbed.storage.manager import LogManager

DEADLINE_S = 10.0


class GatedLogs(LogManager):
    """A LogManager whose partition creation waits for ``gate`` and records its thread."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir, start_background=False)
        self.gate = threading.Event()
        self.gate.set()
        self.threads: set[str] = set()

    def get_or_create_many(
        self, topic: str, partitions: Iterable[int], config: LogConfig
    ) -> list[PartitionLog]:
        self.threads.add(threading.current_thread().name)
        assert self.gate.wait(DEADLINE_S), "test never opened the gate"
        return super().get_or_create_many(topic, partitions, config)

    def update_config(self, topic: str, config: LogConfig) -> None:
        self.threads.add(threading.current_thread().name)
        assert self.gate.wait(DEADLINE_S), "test never opened the gate"
        super().update_config(topic, config)


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[GatedLogs]:
    manager = GatedLogs(tmp_path)
    yield manager
    manager.gate.set()
    manager.close()


async def _until(predicate: object, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not predicate():  # type: ignore[operator]
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.001)  # yields the loop: a stalled loop would never get here


def test_create_runs_on_the_worker_while_the_loop_keeps_serving(
    tmp_path: Path, logs: GatedLogs
) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())

    async def scenario() -> None:
        logs.gate.clear()
        creating = asyncio.ensure_future(topics.create_topic_async("orders", 3))
        await _until(lambda: logs.threads, "the worker to start creating")
        # The loop is free while the worker is stuck on the disk, and nothing is visible.
        ticks = 0
        for _ in range(5):
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 5 and not creating.done()
        assert topics.get("orders") is None
        with pytest.raises(UnknownTopicOrPartitionError):
            topics.partition_log("orders", 0)
        with pytest.raises(TopicAlreadyExistsError):  # the name is taken meanwhile
            await topics.create_topic_async("orders", 1)
        waiter = asyncio.ensure_future(topics.ensure_topic_async("orders"))
        logs.gate.set()
        created = await asyncio.wait_for(creating, DEADLINE_S)
        assert await asyncio.wait_for(waiter, DEADLINE_S) is created
        assert topics.get("orders") is created
        assert [topics.partition_log("orders", p).topic for p in range(3)] == ["orders"] * 3
        topics.close()

    asyncio.run(scenario())
    assert logs.threads and all(name.startswith("riverbed-topics") for name in logs.threads)


def test_concurrent_changes_all_reach_topics_json(tmp_path: Path, logs: GatedLogs) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())
    topics.create_topic("old", 2)
    logs.threads.clear()

    async def scenario() -> None:
        logs.gate.clear()
        jobs = [asyncio.ensure_future(topics.create_topic_async(n, 2)) for n in ("a", "b", "c")]
        await _until(lambda: logs.threads, "the worker to start")
        deleted = topics.begin_delete_topic("old")
        assert topics.get("old") is None  # gone for every request at once
        grow = asyncio.ensure_future(topics.create_partitions_async("a", 4))
        await asyncio.sleep(0)  # "a" is not created yet: growing it is refused
        with pytest.raises(UnknownTopicOrPartitionError):
            await grow
        logs.gate.set()
        await asyncio.wait_for(asyncio.gather(*jobs, deleted), DEADLINE_S)
        await asyncio.wait_for(topics.create_partitions_async("a", 4), DEADLINE_S)
        recreated = await asyncio.wait_for(topics.create_topic_async("old", 1), DEADLINE_S)
        assert recreated.partitions == 1
        topics.close()

    asyncio.run(scenario())
    logs.close()
    reopened = LogManager(tmp_path, start_background=False)
    try:
        again = TopicManager(tmp_path, reopened, BrokerConfig())
        counts = {t.name: t.partitions for t in again.topics()}
        assert counts == {"a": 4, "b": 2, "c": 2, "old": 1}
        assert sorted(reopened.logs()) == sorted(
            [("a", p) for p in range(4)] + [("b", 0), ("b", 1), ("c", 0), ("c", 1), ("old", 0)]
        )
    finally:
        reopened.close()


def test_delete_while_partitions_are_added_removes_them_all(
    tmp_path: Path, logs: GatedLogs
) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())
    topics.create_topic("t", 1)
    logs.threads.clear()

    async def scenario() -> None:
        logs.gate.clear()
        grow = asyncio.ensure_future(topics.create_partitions_async("t", 3))
        await _until(lambda: logs.threads, "the worker to start")
        deleted = topics.begin_delete_topic("t")
        logs.gate.set()
        await asyncio.wait_for(asyncio.gather(grow, deleted), DEADLINE_S)
        topics.close()

    asyncio.run(scenario())
    assert not logs.logs() and topics.get("t") is None


def test_config_changes_run_on_the_worker_one_after_the_other(
    tmp_path: Path, logs: GatedLogs
) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())
    topics.create_topic("t", 2)
    logs.threads.clear()

    def setting(key: str, value: str) -> Callable[[dict[str, str]], dict[str, str]]:
        def change(current: dict[str, str]) -> dict[str, str]:
            return {**current, key: value}

        return change

    async def scenario() -> None:
        logs.gate.clear()
        first = asyncio.ensure_future(
            topics.alter_configs_async("t", setting("retention.ms", "1000"))
        )
        await _until(lambda: logs.threads, "the worker to start")
        # Queued behind the first: applied to *its* result, not to the published configs.
        second = asyncio.ensure_future(
            topics.alter_configs_async("t", setting("segment.bytes", "1048576"))
        )
        await asyncio.sleep(0)
        assert topics.get("t").configs == {}  # type: ignore[union-attr]  # not yet in force
        logs.gate.set()
        await asyncio.wait_for(asyncio.gather(first, second), DEADLINE_S)
        topics.close()

    asyncio.run(scenario())
    assert logs.threads and all(name.startswith("riverbed-topics") for name in logs.threads)
    expected = {"retention.ms": "1000", "segment.bytes": "1048576"}
    assert topics.get("t").configs == expected  # type: ignore[union-attr]
    plog = topics.partition_log("t", 1)
    assert (plog.config.retention_ms, plog.config.segment_bytes) == (1000, 1048576)
    logs.close()
    reopened = LogManager(tmp_path, start_background=False)
    try:
        again = TopicManager(tmp_path, reopened, BrokerConfig())
        assert again.get("t").configs == expected  # type: ignore[union-attr]
    finally:
        reopened.close()


def test_the_synchronous_api_refuses_to_block_the_loop(tmp_path: Path, logs: GatedLogs) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())

    async def scenario() -> None:
        with pytest.raises(RuntimeError, match="_async"):
            topics.create_topic("t")

    asyncio.run(scenario())
    assert topics.get("t") is None


def test_a_change_is_published_even_if_its_requester_is_gone(
    tmp_path: Path, logs: GatedLogs
) -> None:
    topics = TopicManager(tmp_path, logs, BrokerConfig())

    async def scenario() -> None:
        logs.gate.clear()
        creating = asyncio.ensure_future(topics.create_topic_async("orphan", 2))
        await _until(lambda: logs.threads, "the worker to start creating")
        creating.cancel()  # the connection that asked closed
        with pytest.raises(asyncio.CancelledError):
            await creating
        with pytest.raises(TopicAlreadyExistsError):  # still being created
            await topics.create_topic_async("orphan", 1)
        logs.gate.set()
        await _until(lambda: topics.get("orphan") is not None, "the topic to be published")
        assert topics.partition_log("orphan", 1).topic == "orphan"
        topics.close()

    asyncio.run(scenario())
