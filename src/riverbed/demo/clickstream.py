"""A synthetic clickstream: page-view events with event time, some out of order, some late.

Record format (what the page-view pipeline reads)::

    key   = user_id, UTF-8                      e.g. b"user-007"
    value = JSON, UTF-8                         {"user_id": "user-007",
                                                 "url": "/products/12",
                                                 "event_time": 1704067260000}
    timestamp = the event time (CreateTime), epoch ms

Event time is *simulated*: the n-th event of a stream happens at
``start_ms + n * step_ms`` (so a 30 s demo can cover hours of event time), then

* with probability ``out_of_order_fraction`` it is moved back by up to ``jitter_ms``
  (out of order, but within the pipeline's allowed delay: counted);
* with probability ``late_fraction`` it is moved back by ``late_by_ms`` (a straggler far
  behind the watermark: it ends up in the side-output topic).

:class:`ClickstreamGenerator` is a pure, seeded, deterministic iterator -- the same seed gives
the same events, whatever the wall clock does -- so tests can replay it exactly, and
``skip(n)`` resumes a stream after its first ``n`` events.  It counts what it generated
(in order, out of order, late) for the demo's summary.
:class:`ClickstreamProducer` is the thread that paces it onto a topic at ``rate`` events/s
through confluent-kafka (any Kafka-protocol broker).  It stops at :meth:`ClickstreamProducer.stop`
or after ``limit`` events, flushing what it produced; a crash loses at most the events in the
producer's buffer (the generator is deterministic, so nothing else needs recovering).
This module does not import pyspark.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
# 2024-01-01T00:00:00Z: a round hour, so window boundaries are easy to read.
DEFAULT_START_MS = 1_704_067_200_000


@dataclass(frozen=True, slots=True)
class PageView:
    """One page view.  ``event_time_ms`` is when it happened (epoch ms)."""

    user_id: str
    url: str
    event_time_ms: int

    def key(self) -> bytes:
        return self.user_id.encode()

    def value(self) -> bytes:
        return json.dumps(
            {"user_id": self.user_id, "url": self.url, "event_time": self.event_time_ms},
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_value(cls, value: bytes) -> PageView:
        data = json.loads(value)
        return cls(str(data["user_id"]), str(data["url"]), int(data["event_time"]))


@dataclass(frozen=True, slots=True)
class ClickstreamSpec:
    """The shape of a synthetic clickstream; every field has a demo-friendly default."""

    users: int = 20
    seed: int = 7
    start_ms: int = DEFAULT_START_MS
    step_ms: int = 3_000  # event time between consecutive events
    out_of_order_fraction: float = 0.2
    jitter_ms: int = 5 * MINUTE_MS
    late_fraction: float = 0.01
    late_by_ms: int = 2 * HOUR_MS
    pages: int = 50

    def __post_init__(self) -> None:
        if self.users < 1 or self.step_ms < 0 or self.pages < 1:
            raise ValueError("users and pages must be >= 1, step_ms >= 0")
        if not (0 <= self.out_of_order_fraction <= 1 and 0 <= self.late_fraction <= 1):
            raise ValueError("fractions must be within [0, 1]")


class ClickstreamGenerator:
    """An endless, deterministic iterator of :class:`PageView` for one :class:`ClickstreamSpec`.

    Users are drawn with a skew (user 0 is the busiest), so per-user counts differ.
    Not thread-safe: one consumer of the iterator.
    """

    def __init__(self, spec: ClickstreamSpec) -> None:
        self.spec = spec
        self._random = random.Random(spec.seed)
        self._n = 0
        self._weights = [1.0 / (rank + 1) for rank in range(spec.users)]
        self._user_ids = [f"user-{i:03d}" for i in range(spec.users)]
        # What this iterator generated (skip() does not count); read by other threads.
        self.in_order = 0
        self.out_of_order = 0
        self.late = 0
        self.first_event_ms: int | None = None
        self.last_event_ms: int | None = None

    def __iter__(self) -> Iterator[PageView]:
        return self

    def __next__(self) -> PageView:
        return self._next(count=True)

    def _next(self, count: bool) -> PageView:
        spec, rnd = self.spec, self._random
        slot_ms = spec.start_ms + self._n * spec.step_ms
        event_time = slot_ms
        self._n += 1
        draw = rnd.random()
        if draw < spec.late_fraction:
            event_time -= spec.late_by_ms
        elif draw < spec.late_fraction + spec.out_of_order_fraction:
            event_time -= rnd.randint(1, max(1, spec.jitter_ms))
        user = rnd.choices(self._user_ids, weights=self._weights)[0]
        url = f"/page/{rnd.randrange(spec.pages)}"
        if count:
            if draw < spec.late_fraction:
                self.late += 1
            elif event_time < slot_ms:
                self.out_of_order += 1
            else:
                self.in_order += 1
            if self.first_event_ms is None:
                self.first_event_ms = slot_ms
            self.last_event_ms = slot_ms
        return PageView(user, url, max(0, event_time))

    def take(self, count: int) -> list[PageView]:
        return [next(self) for _ in range(count)]

    def skip(self, count: int) -> None:
        """Advance past ``count`` events without counting them (resuming a stream)."""
        for _ in range(count):
            self._next(count=False)


def produce_pageviews(
    kafka_config: Mapping[str, object], topic: str, events: list[PageView], timeout_s: float = 60
) -> None:
    """Produce ``events`` (key user_id, timestamp = event time) and wait for every ack."""
    producer = Producer({"linger.ms": 5, "acks": "all", **kafka_config})
    for event in events:
        _produce(producer, topic, event)
    remaining = producer.flush(timeout_s)
    if remaining:
        raise TimeoutError(f"{remaining} page views not acknowledged within {timeout_s:g} s")


def _produce(producer: Producer, topic: str, event: PageView) -> None:
    while True:
        try:
            producer.produce(
                topic, key=event.key(), value=event.value(), timestamp=event.event_time_ms
            )
            return
        except BufferError:
            producer.poll(0.05)


class ClickstreamProducer(threading.Thread):
    """A daemon thread producing ``generator``'s events to ``topic`` at ``rate`` events/s.

    ``produced`` counts events handed to the client; ``acknowledged`` those the broker
    confirmed; ``errors`` holds the first delivery errors.  ``stop()`` ends it and joins.
    """

    def __init__(
        self,
        kafka_config: Mapping[str, object],
        topic: str,
        generator: ClickstreamGenerator,
        rate: float,
        limit: int | None = None,
    ) -> None:
        super().__init__(name="riverbed-clickstream", daemon=True)
        if rate <= 0:
            raise ValueError(f"rate must be > 0 events/s, got {rate}")
        self._config = {"linger.ms": 5, "acks": "all", **kafka_config}
        self._topic = topic
        self._generator = generator
        self._rate = rate
        self._limit = limit
        self._stopping = threading.Event()
        self.produced = 0
        self.acknowledged = 0
        self.errors: list[str] = []

    def _on_delivery(self, error: object, message: object) -> None:
        if error is None:
            self.acknowledged += 1
        elif len(self.errors) < 5:
            self.errors.append(str(error))

    def run(self) -> None:
        producer = Producer({**self._config, "on_delivery": self._on_delivery})
        started = time.monotonic()
        try:
            while not self._stopping.is_set():
                if self._limit is not None and self.produced >= self._limit:
                    break
                due = int((time.monotonic() - started) * self._rate) + 1
                while self.produced < due and (self._limit is None or self.produced < self._limit):
                    _produce(producer, self._topic, next(self._generator))
                    self.produced += 1
                producer.poll(0)
                # Wake at the next event's due time, or at stop().
                self._stopping.wait(
                    max(0.0, (self.produced / self._rate) - (time.monotonic() - started))
                )
        finally:
            producer.flush(10)

    def stop(self, timeout_s: float = 15) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout_s)


def create_topics(
    kafka_config: Mapping[str, object],
    names: list[str],
    partitions: int,
    timeout_s: float = 30,
) -> None:
    """Create ``names`` with ``partitions`` each and unlimited time retention; existing ones stay.

    Retention must not be time based: event times (= record timestamps) are simulated and
    may lie far in the past, and Kafka's ``retention.ms`` would delete those segments at once.
    """
    admin = AdminClient(cast(dict[str, Any], dict(kafka_config)))
    futures = admin.create_topics(
        [NewTopic(name, partitions, 1, config={"retention.ms": "-1"}) for name in names],
        request_timeout=timeout_s,
    )
    for future in futures.values():
        try:
            future.result(timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            exists = isinstance(error, KafkaError) and (
                error.code() == KafkaError.TOPIC_ALREADY_EXISTS
            )
            if not exists:
                raise
