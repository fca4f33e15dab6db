"""A REJECTed record's dead-letter copy survives a SIGKILL of the broker right after the
broker applied the REJECT, and the record does not come back (its ARCHIVED state, appended
after the copy in the same step, survived too).  ~15 s."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer
from share_helpers import create_topic, produce

from riverbed.queue import Delivery, QueueWorkers, RejectDelivery, WorkerSettings
from riverbed.testing.broker_process import BrokerProcess
from riverbed.testing.kafka_share_reference import enable_dead_letters, set_share_group_config

DEADLINE_S = 120.0  # a loaded machine: the restart and a new reader group can be slow


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _dead_letters(bootstrap: str, topic: str, at_least: int) -> list[dict[str, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[dict[str, bytes]] = []

    def step() -> bool:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            out.append(dict(message.headers() or []))
        return len(out) >= at_least

    try:
        _wait(step, f"{at_least} dead letters")
    finally:
        consumer.close()
    return out


def test_a_dead_letter_survives_a_kill_9_after_the_reject(share_broker: BrokerProcess) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "poison-src", 1)
    set_share_group_config(bs, "poison-group", {"share.auto.offset.reset": "earliest"})
    enable_dead_letters(bs, "poison-group", "dlq.poison-src")
    produce(bs, "poison-src", [b"poison"], 1)

    def reject(delivery: Delivery) -> None:
        raise RejectDelivery()

    settings = WorkerSettings(bs, "poison-group", ("poison-src",))
    with QueueWorkers(settings, reject) as workers:
        _wait(lambda: workers.stats.snapshot()["reject"] == 1, "the rejection")
        # the worker counts a REJECT when it hands it to the client, which sends it later:
        # kill once the broker has applied it (the copy is readable)
        _dead_letters(bs, "dlq.poison-src", 1)
        share_broker.kill()
    share_broker.start(timeout_s=180)
    (headers,) = _dead_letters(bs, "dlq.poison-src", 1)
    assert headers["__dlq.errors.offset"] == b"0"
    assert headers["__dlq.errors.message"] == b"Offset rejected by client."
    seen: list[bytes] = []
    with QueueWorkers(settings, lambda d: seen.append(d.value or b"")):
        time.sleep(3.0)  # several lock periods: an archived record must not come back
    assert seen == []
