"""Where change events go: an idempotent ``acks=all`` Kafka producer that reports, in order,
how far the broker has acknowledged.

::

    sink = ChangeSink(client_config)                  # any Kafka cluster
    sink.ensure_topics(["riverbed.main.users"])       # created compacted when missing
    sink.send("riverbed.main.users", records_for(event), position=42)
    sink.poll(0.1)
    sink.acknowledged()   # -> 42 once every record of this send and of every earlier send
                          #    is acknowledged; None before the first

**Positions.**  Each :meth:`ChangeSink.send` carries an opaque, caller-ordered position
(a SQLite change-table ``seq``, a PostgreSQL LSN).  :meth:`acknowledged` returns the
position of the longest *prefix* of sends whose records were all acknowledged, so a caller
may release its source up to there (delete change rows, confirm the slot's LSN): nothing
at or before that position can still be lost.  Deliveries across topics may complete out
of order; the prefix rule hides that.

**Delivery guarantees.**  ``acks=all`` and ``enable.idempotence=true`` (unless the caller's
config overrides them): retries neither duplicate nor reorder records within a partition,
so per-key order is the order of :meth:`send`.  A record that fails for good (timeout,
refused) makes the next :meth:`poll`/:meth:`flush` raise :class:`CdcError`; the caller must
stop and restart from its last acknowledged position (duplicates of unacknowledged changes
are then possible, loss is not).

**Topics.**  :meth:`ensure_topics` creates missing topics through the AdminClient with
``cleanup.policy=compact`` (an existing topic is left as it is).

**Routing.**  An optional ``router`` (:class:`~riverbed.cdc.outbox.RecordRouter`, e.g. the
outbox event router) may replace the records of a send by others, to other topics and with
headers; they count for the send's position like the records they replace.  Topics a router
produces to are created (with the router's topic config) the first time they are used.

Not thread-safe: one thread sends, polls and reads positions.  A crash loses only what
was not yet acknowledged; nothing is stored here.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from riverbed.errors import CdcError

if TYPE_CHECKING:
    from riverbed.cdc.outbox import RecordRouter, RoutedRecord

P = TypeVar("P")

PRODUCER_DEFAULTS: Mapping[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "message.timeout.ms": 120_000,
}

COMPACTED: Mapping[str, str] = {"cleanup.policy": "compact"}


class AckTracker(Generic[P]):
    """The in-order acknowledged position: sends are registered in order with the number of
    records each holds; :meth:`acknowledged` is the position of the last send such that it
    and every earlier send had all their records acknowledged.  Not thread-safe."""

    def __init__(self) -> None:
        self._next = 0
        self._remaining: dict[int, int] = {}
        self._order: collections.deque[tuple[int, P]] = collections.deque()
        self._acknowledged: P | None = None

    def register(self, records: int, position: P) -> int:
        """A new send of ``records`` records; returns its serial for :meth:`ack`."""
        serial = self._next
        self._next += 1
        self._remaining[serial] = records
        self._order.append((serial, position))
        return serial

    def ack(self, serial: int) -> None:
        """One record of send ``serial`` was acknowledged."""
        self._remaining[serial] -= 1

    def acknowledged(self) -> P | None:
        while self._order and self._remaining[self._order[0][0]] <= 0:
            serial, position = self._order.popleft()
            del self._remaining[serial]
            self._acknowledged = position
        return self._acknowledged

    def pending(self) -> int:
        """Sends not yet fully acknowledged (as of the last :meth:`acknowledged`)."""
        return len(self._order)


class ChangeSink(Generic[P]):
    """An idempotent producer with in-order acknowledgement tracking (see module doc).

    ``config`` is a librdkafka client config (``bootstrap.servers`` at least); producer
    defaults of :data:`PRODUCER_DEFAULTS` apply beneath it.  ``num_partitions`` and
    ``replication_factor`` are used for topics this sink creates (``-1``: the broker's
    default).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        num_partitions: int = 1,
        replication_factor: int = -1,
        timeout_s: float = 15.0,
        router: RecordRouter | None = None,
    ) -> None:
        from confluent_kafka import Producer

        self._config = dict(config)
        self._num_partitions = num_partitions
        self._replication_factor = replication_factor
        self._timeout_s = timeout_s
        self._producer = Producer({**PRODUCER_DEFAULTS, **self._config})
        self._tracker: AckTracker[P] = AckTracker()
        self._error: str | None = None
        self._router = router
        self._routed_topics: set[str] = set()

    # -- topics -----------------------------------------------------------------------

    def ensure_topics(
        self, topics: Iterable[str], topic_config: Mapping[str, str] = COMPACTED
    ) -> list[str]:
        """Create the missing ``topics`` (compacted by default); return those created.

        Raises :class:`CdcError` when the cluster cannot be asked or refuses."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        admin = AdminClient(self._config)
        try:
            existing = set(admin.list_topics(timeout=self._timeout_s).topics)
        except KafkaException as exc:
            raise CdcError(f"cannot list topics at {self._bootstrap()}: {exc}") from None
        missing = [t for t in dict.fromkeys(topics) if t not in existing]
        if not missing:
            return []
        futures = admin.create_topics(
            [
                NewTopic(
                    t,
                    num_partitions=self._num_partitions,
                    replication_factor=self._replication_factor,
                    config=dict(topic_config),
                )
                for t in missing
            ],
            operation_timeout=self._timeout_s,
            request_timeout=self._timeout_s,
        )
        created = []
        for topic, future in futures.items():
            try:
                future.result(timeout=self._timeout_s)
                created.append(topic)
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                if (
                    isinstance(error, KafkaError)
                    and error.code() == KafkaError.TOPIC_ALREADY_EXISTS
                ):
                    continue
                raise CdcError(f"cannot create topic {topic!r}: {exc}") from None
            except Exception as exc:  # the future's own timeout
                raise CdcError(f"cannot create topic {topic!r}: {exc!r}") from None
        return created

    # -- sending ----------------------------------------------------------------------

    def send(
        self, topic: str, records: Sequence[tuple[bytes | None, bytes | None]], position: P
    ) -> None:
        """Queue ``records`` (key, value) to ``topic``; ``position`` becomes acknowledged
        once they and every earlier send are.  Blocks (serving callbacks) while the
        client's queue is full.  Raises :class:`CdcError` after a failed delivery."""
        self._raise_if_failed()
        routed = self._router.route(topic, records) if self._router is not None else None
        if routed is not None:
            self._send_routed(routed, position)
            return
        serial = self._tracker.register(len(records), position)

        def on_delivery(err: Any, _msg: Any, serial: int = serial) -> None:
            if err is not None:
                if self._error is None:
                    self._error = f"a change to {topic!r} was not delivered: {err}"
                return
            self._tracker.ack(serial)

        for key, value in records:
            while True:
                try:
                    self._producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                    break
                except BufferError:
                    self._producer.poll(0.05)
                    self._raise_if_failed()

    def _send_routed(self, routed: Sequence[RoutedRecord], position: P) -> None:
        assert self._router is not None
        missing = [r.topic for r in routed if r.topic not in self._routed_topics]
        if missing:
            self.ensure_topics(missing, self._router.topic_config())
            self._routed_topics.update(missing)
        serial = self._tracker.register(len(routed), position)

        def on_delivery(err: Any, msg: Any, serial: int = serial) -> None:
            if err is not None:
                if self._error is None:
                    self._error = f"an event to {msg.topic()!r} was not delivered: {err}"
                return
            self._tracker.ack(serial)

        for record in routed:
            while True:
                try:
                    self._producer.produce(
                        record.topic,
                        key=record.key,
                        value=record.value,
                        headers=record.headers,
                        on_delivery=on_delivery,
                    )
                    break
                except BufferError:
                    self._producer.poll(0.05)
                    self._raise_if_failed()

    def produce_untracked(self, topic: str, key: bytes, value: bytes | None) -> None:
        """Queue one record whose acknowledgement no position waits for (offset records);
        a failure still makes the next poll raise."""

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None and self._error is None:
                self._error = f"a record to {topic!r} was not delivered: {err}"

        while True:
            try:
                self._producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                return
            except BufferError:
                self._producer.poll(0.05)

    def poll(self, timeout_s: float = 0.0) -> P | None:
        """Serve delivery callbacks for up to ``timeout_s``; return :meth:`acknowledged`."""
        self._producer.poll(timeout_s)
        self._raise_if_failed()
        return self.acknowledged()

    def flush(self, timeout_s: float) -> P | None:
        """Wait up to ``timeout_s`` for every queued record; return :meth:`acknowledged`."""
        deadline = time.monotonic() + timeout_s
        while len(self._producer) and time.monotonic() < deadline:
            self._producer.flush(min(0.2, max(0.0, deadline - time.monotonic())))
            self._raise_if_failed()
        self._producer.poll(0)
        self._raise_if_failed()
        return self.acknowledged()

    def acknowledged(self) -> P | None:
        """The position of the last send such that it and all earlier sends are fully
        acknowledged (``None`` before the first)."""
        return self._tracker.acknowledged()

    def in_flight(self) -> int:
        """Sends not yet fully acknowledged."""
        self._tracker.acknowledged()
        return self._tracker.pending()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise CdcError(self._error)

    def _bootstrap(self) -> str:
        return str(self._config.get("bootstrap.servers", "?"))
