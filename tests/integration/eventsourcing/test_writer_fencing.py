"""A zombie writer is fenced: writer A stops mid-transaction (events produced, nothing
committed), writer B starts with the same writer id (``init_transactions`` bumps the epoch
and aborts A's transaction), A resumes and its commit fails with
:class:`~riverbed.errors.WriterFencedError`; B decides the command again from the committed
offsets: exactly one event, the client's reply from B (~20 s)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from riverbed.errors import WriterFencedError
from riverbed.eventsourcing import (
    AppTopics,
    CommandClient,
    CommandWriter,
    Event,
    create_topics,
    read_to_end,
    replay,
)
from riverbed.eventsourcing.bank import BankAccount
from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("es-fencing-broker")) as embedded:
        yield embedded


class PausingWriter(CommandWriter):
    """Stops inside its first transaction, after producing the command's events."""

    entered = threading.Event()
    release = threading.Event()

    def _decide(self, producer: Any, msg: Any, staged: Any) -> None:
        super()._decide(producer, msg, staged)
        producer.flush(30)  # the events are in the log, inside the open transaction
        self.entered.set()
        assert self.release.wait(120)


def test_zombie_writer_is_fenced_and_its_transaction_aborted(broker: EmbeddedBroker) -> None:
    fencing_scenario(broker.bootstrap_servers)


@pytest.mark.kafka
@pytest.mark.timeout(600)
def test_zombie_writer_is_fenced_on_apache_kafka() -> None:
    """The same against Apache Kafka (``-m kafka``): the package needs no Riverbed."""
    from riverbed.testing.kafka_reference import KafkaReference

    with KafkaReference() as kafka:
        fencing_scenario(kafka.bootstrap_servers)


def fencing_scenario(bootstrap: str) -> None:
    config = {"bootstrap.servers": bootstrap}
    topics = AppTopics(f"fence{uuid.uuid4().hex[:6]}")
    create_topics(config, topics, partitions=1)
    errors: dict[str, BaseException] = {}
    stop = threading.Event()

    def run(writer: CommandWriter, name: str, ready: threading.Event) -> None:
        try:
            writer.run(stop, on_ready=ready.set)
        except BaseException as exc:
            errors[name] = exc

    zombie = PausingWriter(config, topics, BankAccount(), writer_id="w1")
    a_ready, b_ready = threading.Event(), threading.Event()
    thread_a = threading.Thread(target=run, args=(zombie, "a", a_ready))
    thread_a.start()
    client = CommandClient(config, topics)
    try:
        assert a_ready.wait(120)
        future = client.send("acct-1", "Deposit", {"amount": 10})
        assert zombie.entered.wait(120), "writer A never decided the command"
        successor = CommandWriter(config, topics, BankAccount(), writer_id="w1")
        thread_b = threading.Thread(target=run, args=(successor, "b", b_ready))
        thread_b.start()
        assert b_ready.wait(120), "writer B did not start"  # A's epoch is now fenced
        zombie.release.set()
        thread_a.join(120)
        assert isinstance(errors.get("a"), WriterFencedError), errors
        reply = future.result(timeout=120)  # decided again, by B
        assert reply.ok and reply.version == 1, reply
    finally:
        zombie.release.set()
        stop.set()
        client.close()
        thread_a.join(60)
    thread_b.join(60)
    assert "b" not in errors, errors
    events = [Event.decode(m.value()) for m in read_to_end(config, topics.events)]
    assert [(e.aggregate, e.version, e.type) for e in events] == [("acct-1", 1, "Deposited")]
    assert replay(config, topics, BankAccount()) == {"acct-1": (1, {"balance": 10})}
