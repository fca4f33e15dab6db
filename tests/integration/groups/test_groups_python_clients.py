"""kafka-python and aiokafka consumer groups (classic protocol, client-side assignors):
three members share a six-partition topic, every record reaches exactly one member."""

from __future__ import annotations

import asyncio
import threading
import time

from aiokafka import AIOKafkaConsumer
from groups_helpers import create_topic, produce, wait_until
from kafka import KafkaConsumer

from riverbed.testing.embedded import EmbeddedBroker

PARTITIONS = 6
VALUES = [f"v{i}".encode() for i in range(60)]
COMMON = {
    "group_id": "g",
    "auto_offset_reset": "earliest",
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 500,
    "enable_auto_commit": False,
}


def balanced(owned: list[set[int]]) -> bool:
    return all(owned) and sorted(p for ps in owned for p in ps) == list(range(PARTITIONS))


def test_kafka_python_group(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "t", PARTITIONS)
    stop = threading.Event()
    lock = threading.Lock()
    seen: dict[bytes, list[int]] = {}
    owned: list[set[int]] = [set(), set(), set()]

    def run(i: int) -> None:
        c = KafkaConsumer(bootstrap_servers=bootstrap, **COMMON)
        # Learn the topic's partitions before joining.  kafka-python 3.0.12 otherwise may
        # join with no metadata, assign nothing, and rejoin; in that extra rebalance one
        # member sometimes receives its SyncGroup answer (logged by the client) but never
        # applies it and never heartbeats again, leaving the group unbalanced for good.
        wait_until(lambda: c.partitions_for_topic("t"), 10, "kafka-python metadata for t")
        c.subscribe(["t"])
        try:
            while not stop.is_set():
                batches = c.poll(timeout_ms=100)
                with lock:
                    owned[i] = {tp.partition for tp in c.assignment()}
                    for records in batches.values():
                        for r in records:
                            seen.setdefault(r.value, []).append(i)
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: balanced(owned), 30, "a balanced kafka-python group")
        produce(bootstrap, "t", VALUES, PARTITIONS)
        wait_until(lambda: len(seen) == len(VALUES), 30, "every record")
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    assert sorted(seen) == sorted(VALUES)
    assert all(len(who) == 1 for who in seen.values())


def test_aiokafka_group(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "t", PARTITIONS)

    async def main() -> dict[bytes, list[int]]:
        members = [AIOKafkaConsumer("t", bootstrap_servers=bootstrap, **COMMON) for _ in range(3)]
        for c in members:
            await c.start()
        seen: dict[bytes, list[int]] = {}

        async def step(deadline_s: float, done: object) -> None:
            deadline = time.monotonic() + deadline_s
            while not done():  # type: ignore[operator]
                assert time.monotonic() < deadline, "timed out"
                for i, c in enumerate(members):
                    for records in (await c.getmany(timeout_ms=50)).values():
                        for r in records:
                            seen.setdefault(r.value, []).append(i)

        try:
            await step(
                30, lambda: balanced([{tp.partition for tp in c.assignment()} for c in members])
            )
            await asyncio.get_running_loop().run_in_executor(
                None, produce, bootstrap, "t", VALUES, PARTITIONS
            )
            await step(30, lambda: len(seen) == len(VALUES))
        finally:
            for c in members:
                await c.stop()
        return seen

    seen = asyncio.run(main())
    assert sorted(seen) == sorted(VALUES)
    assert all(len(who) == 1 for who in seen.values())
