"""Sending commands and waiting for their replies; creating an application's topics.

::

    create_topics(config, AppTopics("bank"), partitions=3)
    with CommandClient(config, AppTopics("bank")) as client:
        reply = client.submit("a-1", "Deposit", {"amount": 100}, expected_version=0)
        reply.ok, reply.version, reply.error     # True, 1, None

A command is produced (idempotent, acks=all) to ``<app>.commands`` keyed by its aggregate;
the reply, written by the writer in the transaction that decided the command, is read
(read_committed) from ``<app>.replies`` by a background thread that started at the topic's
end when the client was created.  :meth:`CommandClient.submit` is thread-safe: any number of
threads may share one client.

**Crash behaviour.**  A command is decided exactly once once it is in the topic (see
:mod:`riverbed.eventsourcing.writer`); a client that times out waiting does not know
whether it was decided — resubmitting with the ``expected_version`` it read makes the
retry safe (a second application is rejected as stale).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from riverbed.errors import EventSourcingError
from riverbed.eventsourcing.model import AppTopics, Command, Reply, partition_for
from riverbed.eventsourcing.replay import partition_count


def create_topics(
    config: Mapping[str, Any], topics: AppTopics, *, partitions: int, timeout_s: float = 30.0
) -> None:
    """Create the application's topics when missing: commands, events (kept), snapshots
    (compacted) with ``partitions`` partitions each, replies with one."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(dict(config))
    wanted = [
        NewTopic(topics.commands, num_partitions=partitions),
        NewTopic(topics.events, num_partitions=partitions, config={"retention.ms": "-1"}),
        NewTopic(topics.snapshots, num_partitions=partitions, config={"cleanup.policy": "compact"}),
        NewTopic(topics.replies, num_partitions=1),
    ]
    for name, future in admin.create_topics(wanted, operation_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise EventSourcingError(f"cannot create topic {name!r}: {exc}") from None
    _wait_for_leaders(admin, [t.topic for t in wanted], timeout_s)


def _wait_for_leaders(admin: Any, names: list[str], timeout_s: float) -> None:
    """Until every partition of ``names`` has a leader (a new topic's partitions may not
    yet have one on a multi-node Kafka cluster: NOT_LEADER_FOR_PARTITION)."""
    deadline = time.monotonic() + timeout_s
    while True:
        topics = admin.list_topics(timeout=timeout_s).topics
        if all(
            name in topics
            and topics[name].partitions
            and all(p.leader >= 0 for p in topics[name].partitions.values())
            for name in names
        ):
            return
        if time.monotonic() > deadline:
            raise EventSourcingError(f"topics {names} have no leader after {timeout_s}s")
        time.sleep(0.2)  # metadata polling interval


class CommandClient:
    """Submits commands and returns their replies (see module doc).  Thread-safe."""

    def __init__(self, config: Mapping[str, Any], topics: AppTopics) -> None:
        from confluent_kafka import Consumer, Producer, TopicPartition

        self.topics = topics
        self._producer = Producer({**config, "acks": "all", "enable.idempotence": True})
        self._consumer = Consumer(
            {
                **config,
                "group.id": f"riverbed-es-client-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        high = self._replies_end(TopicPartition(topics.replies, 0))
        self._consumer.assign([TopicPartition(topics.replies, 0, high)])
        self._partitions = partition_count(config, topics.commands)
        self._lock = threading.Lock()
        self._waiting: dict[str, Future[Reply]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read_replies, daemon=True)
        self._thread.start()

    def _replies_end(self, tp: Any, timeout_s: float = 60.0) -> int:
        """The replies partition's end; retried while its leader is not yet known."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                _low, high = self._consumer.get_watermark_offsets(tp, timeout=10)
                return int(high)
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                retriable = error is not None and getattr(error, "retriable", lambda: False)()
                if time.monotonic() > deadline or not (retriable or "leader" in str(exc).lower()):
                    raise EventSourcingError(f"cannot read {tp.topic}'s end: {exc}") from None
                time.sleep(0.2)  # metadata settles

    def send(
        self,
        aggregate_id: str,
        command_type: str,
        data: Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Future[Reply]:
        """Produce a command; the future completes with its :class:`Reply`."""
        command = Command(
            uuid.uuid4().hex, aggregate_id, command_type, dict(data), expected_version
        )
        future: Future[Reply] = Future()
        with self._lock:
            self._waiting[command.id] = future
            self._producer.produce(
                self.topics.commands,
                key=aggregate_id.encode(),
                value=command.encode(),
                partition=partition_for(aggregate_id, self._partitions),
            )
            self._producer.poll(0)  # sent by librdkafka's thread (linger.ms), not flushed here
        return future

    def submit(
        self,
        aggregate_id: str,
        command_type: str,
        data: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        timeout_s: float = 120.0,
    ) -> Reply:
        """:meth:`send` and wait for the reply (an error after ``timeout_s``)."""
        future = self.send(aggregate_id, command_type, data, expected_version=expected_version)
        try:
            return future.result(timeout=timeout_s)
        except TimeoutError:
            raise EventSourcingError(
                f"no reply to {command_type} on {aggregate_id} within {timeout_s}s"
            ) from None

    def _read_replies(self) -> None:
        while not self._stop.is_set():
            msg = self._consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            value = msg.value()
            if value is None:
                continue
            reply = Reply.decode(value)
            with self._lock:
                future = self._waiting.pop(reply.command_id, None)
            if future is not None:
                future.set_result(reply)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()
        self._producer.flush(10)

    def __enter__(self) -> CommandClient:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.close()
