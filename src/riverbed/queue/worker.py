"""RabbitMQ-style workers on a Kafka share group (KIP-932), one share consumer each.

:class:`QueueWorkers` runs ``concurrency`` threads; each owns one
``confluent_kafka.ShareConsumer`` in *explicit* acknowledgement mode (the client is not
thread-safe, so consumers are never shared) and loops::

    poll -> for each record: handler(Delivery) -> acknowledge(ACCEPT | RELEASE | REJECT)
         -> (acknowledgements ride on the next poll; commit_sync on stop)

Outcome of one delivery (see :mod:`riverbed.queue.delivery`):

========================================  ===============================================
handler returns                           ACCEPT
handler raises :class:`RejectDelivery`    REJECT (archived; dead-lettered where configured)
handler raises anything else              RELEASE after a backoff, while
                                          ``delivery_count < max_attempts``; else REJECT
========================================  ===============================================

Guarantees:

- **At least once, per record.**  A record is ACCEPTed only after its handler returned.  A
  handler may run more than once for one record: after a RELEASE, after a worker crash, or
  when an acknowledgement is lost with its connection.  Make handlers idempotent.
- **A crash redelivers, at the latest after the lock timeout.**  Records a dead or hung
  worker held go to other workers with ``delivery_count`` + 1 once the broker's
  acquisition lock expires (``group.share.record.lock.duration.ms``, 30 s by default in
  Kafka; per group ``share.record.lock.duration.ms``).  Kafka 4.4 releases them sooner when
  it sees the worker's connection close (a killed process: ~0.5 s measured); a worker that
  hangs with its connection open holds them for the whole lock.
- **The broker bounds retries too**: Kafka archives a record after
  ``group.share.delivery.count.limit`` deliveries (5 by default) whatever the worker does, so
  ``max_attempts`` above that limit has no effect.
- **No ordering**: records of one partition are spread over workers and retried out of
  order, as with several consumers on one RabbitMQ queue.
- **Graceful stop** (:meth:`QueueWorkers.stop`, or SIGTERM/SIGINT in :meth:`QueueWorkers.run`):
  a handler that is running finishes and its record is acknowledged; records fetched but
  not started are RELEASEd (at once, no backoff; their delivery count still grows by one,
  as for any RELEASE) so other consumers get them without waiting for the lock;
  acknowledgements are committed (``commit_sync``) and each consumer leaves the group
  (``close``).

A handler slower than the lock loses its record: the broker hands it to another consumer,
the late acknowledgement is refused by the client (logged, not counted) and the record is
processed again.  The backoff before a RELEASE (``retry_backoff_ms`` doubled per delivery, capped at
``retry_backoff_max_ms``) is spent holding the record's lock in the worker thread, so keep it
well below the lock duration; a stop cuts it short.

Thread-safety: construct and call :meth:`start`/:meth:`stop`/:meth:`run` from one thread;
:attr:`stats` may be read from any thread.  Handlers run on the worker threads, so a handler
shared by ``concurrency`` > 1 workers must be thread-safe.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from riverbed.queue.delivery import Delivery, Outcome, QueueError, RejectDelivery
from riverbed.signals import SignalStop

Handler = Callable[[Delivery], object]
"""Called once per delivery on a worker thread; returning means ACCEPT."""

OutcomeCallback = Callable[[Delivery, Outcome, str], None]
"""``(delivery, outcome, detail)``: ``detail`` is ``str()`` of what the handler returned
(``""`` for None) or of the exception it raised (its type name when the message is empty)."""

_log = logging.getLogger("riverbed.queue")
_client_log = logging.getLogger("riverbed.queue.kafka_client")
_client_log.addHandler(logging.NullHandler())


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """What the workers consume and how they retry.

    ``client_config`` entries are librdkafka settings merged last (e.g. security).
    """

    bootstrap_servers: str
    group_id: str
    topics: tuple[str, ...]
    concurrency: int = 1
    max_attempts: int = 5
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 5_000
    poll_timeout_ms: int = 500
    close_timeout_s: float = 30.0
    client_config: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise QueueError(f"concurrency must be >= 1, not {self.concurrency}")
        if self.max_attempts < 1:
            raise QueueError(f"max_attempts must be >= 1, not {self.max_attempts}")
        if not self.topics:
            raise QueueError("at least one topic is needed")

    def backoff_s(self, delivery_count: int) -> float:
        """Seconds to wait before releasing a record that failed its ``delivery_count``-th try."""
        ms: int = self.retry_backoff_ms * 2 ** max(0, delivery_count - 1)
        return min(ms, self.retry_backoff_max_ms) / 1000.0

    def consumer_config(self, worker_index: int) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "client.id": f"riverbed-queue-{worker_index}",
            "share.acknowledgement.mode": "explicit",
            "logger": _client_log,
            **self.client_config,
        }


class QueueStats:
    """Counters of outcomes so far, over all workers; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = {outcome: 0 for outcome in Outcome}

    def add(self, outcome: Outcome) -> None:
        with self._lock:
            self._counts[outcome] += 1

    def snapshot(self) -> dict[str, int]:
        """``{"accept": n, "release": n, "reject": n}``."""
        with self._lock:
            return {outcome.value: n for outcome, n in self._counts.items()}


def to_delivery(message: Any) -> Delivery:
    """A :class:`Delivery` from a confluent-kafka ``Message`` polled by a share consumer."""
    timestamp_type, timestamp = message.timestamp()
    headers = tuple((str(k), v) for k, v in (message.headers() or ()))
    return Delivery(
        topic=message.topic(),
        partition=message.partition(),
        offset=message.offset(),
        key=message.key(),
        value=message.value(),
        headers=headers,
        timestamp_ms=timestamp if timestamp_type else None,
        delivery_count=message.delivery_count() or 1,
    )


def _detail(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class _Worker:
    """One thread's loop around one share consumer (private: use :class:`QueueWorkers`)."""

    def __init__(
        self,
        index: int,
        settings: WorkerSettings,
        handler: Handler,
        stopping: threading.Event,
        stats: QueueStats,
        on_outcome: OutcomeCallback | None,
    ) -> None:
        self.index = index
        self.settings = settings
        self.handler = handler
        self.stopping = stopping
        self.stats = stats
        self.on_outcome = on_outcome
        self.error: BaseException | None = None

    def run(self) -> None:
        from confluent_kafka import ShareConsumer

        try:
            consumer = ShareConsumer(self.settings.consumer_config(self.index))
        except Exception as exc:
            self.error = exc
            self.stopping.set()
            return
        try:
            consumer.subscribe(list(self.settings.topics))
            while not self.stopping.is_set():
                self._poll_once(consumer)
        except BaseException as exc:  # a bug or a fatal client error: stop every worker
            self.error = exc
            _log.error("queue worker %d failed: %r", self.index, exc)
            self.stopping.set()
        finally:
            with contextlib.suppress(Exception):
                consumer.commit_sync(self.settings.close_timeout_s)
            with contextlib.suppress(Exception):
                consumer.close()

    def _poll_once(self, consumer: Any) -> None:
        from confluent_kafka import KafkaException

        try:
            messages = consumer.poll(self.settings.poll_timeout_ms / 1000.0)
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal():
                raise
            _log.warning("share consumer poll: %s", error)
            self.stopping.wait(0.5)
            return
        for message in messages:
            error = message.error()
            if error is not None:
                if error.fatal():
                    raise QueueError(f"share consumer failed: {error.str()}")
                _log.warning("share consumer: %s", error.str())
                continue
            self._acknowledge(consumer, message, self._process(message))

    def _process(self, message: Any) -> tuple[Delivery, Outcome, str]:
        delivery = to_delivery(message)
        if self.stopping.is_set():
            return delivery, Outcome.RELEASE, "stopping"  # not started: hand it back now
        try:
            result = self.handler(delivery)
        except RejectDelivery as exc:
            return delivery, Outcome.REJECT, _detail(exc)
        except Exception as exc:
            if delivery.delivery_count >= self.settings.max_attempts:
                _log.warning(
                    "%s-%d@%d failed %d times, rejecting: %r",
                    delivery.topic,
                    delivery.partition,
                    delivery.offset,
                    delivery.delivery_count,
                    exc,
                )
                return delivery, Outcome.REJECT, _detail(exc)
            self.stopping.wait(self.settings.backoff_s(delivery.delivery_count))
            return delivery, Outcome.RELEASE, _detail(exc)
        return delivery, Outcome.ACCEPT, "" if result is None else str(result)

    def _acknowledge(
        self, consumer: Any, message: Any, result: tuple[Delivery, Outcome, str]
    ) -> None:
        from confluent_kafka import AcknowledgeType, IllegalStateException

        delivery, outcome, detail = result
        ack_type = {
            Outcome.ACCEPT: AcknowledgeType.ACCEPT,
            Outcome.RELEASE: AcknowledgeType.RELEASE,
            Outcome.REJECT: AcknowledgeType.REJECT,
        }[outcome]
        try:
            consumer.acknowledge(message, ack_type)
        except IllegalStateException as exc:
            # The record's lock expired while earlier records of the batch were handled:
            # the broker has already made it available again, so this outcome is lost and
            # the record comes back (at least once).
            _log.warning(
                "%s-%d@%d: %s not recorded: %s",
                delivery.topic,
                delivery.partition,
                delivery.offset,
                outcome.value,
                exc,
            )
            return
        self.stats.add(outcome)
        if self.on_outcome is not None:
            self.on_outcome(delivery, outcome, detail)


class QueueWorkers:
    """``settings.concurrency`` worker threads consuming one share group with ``handler``.

    ``on_outcome(delivery, outcome, detail)`` (:data:`OutcomeCallback`), if given, is called
    on the worker thread right after each acknowledgement is recorded (before it reaches the
    broker).
    """

    def __init__(
        self,
        settings: WorkerSettings,
        handler: Handler,
        on_outcome: OutcomeCallback | None = None,
    ) -> None:
        self.settings = settings
        self.stats = QueueStats()
        self._stopping = threading.Event()
        self._workers = [
            _Worker(i, settings, handler, self._stopping, self.stats, on_outcome)
            for i in range(settings.concurrency)
        ]
        self._threads: list[threading.Thread] = []

    def start(self) -> QueueWorkers:
        """Start the worker threads (non-daemon: a stop commits their acknowledgements)."""
        if self._threads:
            raise QueueError("workers already started")
        for worker in self._workers:
            thread = threading.Thread(
                target=worker.run, name=f"riverbed-queue-{worker.index}", daemon=False
            )
            thread.start()
            self._threads.append(thread)
        return self

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def request_stop(self) -> None:
        """Ask every worker to stop after its current record; returns at once."""
        self._stopping.set()

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop gracefully (see the module docstring) and wait for the threads.

        Raises :class:`QueueError` if a worker died of an error.
        """
        self._stopping.set()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        self._raise_worker_error()

    def _raise_worker_error(self) -> None:
        for worker in self._workers:
            if worker.error is not None:
                raise QueueError(f"queue worker {worker.index} failed: {worker.error}")

    def run(self) -> None:
        """Start, then block until SIGTERM/SIGINT (or :meth:`request_stop`); stop gracefully.

        Must be called from the main thread (it installs the signal handlers, and restores
        the previous ones before returning).  The handlers take no lock
        (:class:`riverbed.signals.SignalStop`: an ``Event.set()`` there could wait forever
        for the lock its own thread holds inside ``wait()``).
        """
        with SignalStop(self._stopping):
            self.start()
            while not self._stopping.wait(0.2):
                pass
            self.stop()

    def __enter__(self) -> QueueWorkers:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
