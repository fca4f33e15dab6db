"""Helpers for the outbox tests (imported by basename, so the name is unique): a connector
child process (``riverbed cdc sqlite|postgres --outbox-table ...``) and topic reads with
headers up to the high watermark.  Every wait is a condition polled against a deadline."""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from riverbed.testing.child_process import ChildProcess
from riverbed.testing.waiting import wait_until

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "cdc"]


@dataclass(frozen=True)
class Event:
    topic: str
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes]
    offset: int


class ConnectorProcess(ChildProcess):
    """``riverbed cdc <kind> ...`` as a child: started, SIGTERMed or SIGKILLed."""

    def __init__(self, log_path: Path, *args: str) -> None:
        super().__init__(log_path, [*ENTRY, *args])


def read_events(bootstrap: str, topic: str) -> list[Event]:
    """Every record of partition 0 up to the high watermark ([] when the topic is missing)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False}
    )
    try:
        if topic not in consumer.list_topics(timeout=10).topics:
            return []
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        out: list[Event] = []
        if high == 0:
            return out
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 60
        while True:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                headers = {k: v for k, v in (msg.headers() or [])}
                out.append(Event(topic, msg.key(), msg.value(), headers, msg.offset()))
                if msg.offset() + 1 >= high:
                    return out
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out reading {topic} to offset {high}")
    finally:
        consumer.close()


def wait_events(bootstrap: str, topic: str, count: int, timeout_s: float = 90) -> list[Event]:
    """The topic's events once it holds at least ``count``."""

    def enough() -> list[Event] | None:
        events = read_events(bootstrap, topic)
        return events if len(events) >= count else None

    return wait_until(enough, timeout_s, f"{count} events in {topic}")


def topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)
