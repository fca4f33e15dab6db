"""A Kafka Streams application (``exactly_once_v2``) run unchanged, killed mid-run.

The word count of ``tests/compat/kafka_streams/`` (a repartition by word, a persistent
count store with its changelog; :mod:`riverbed.testing.kafka_streams_app`) reads lines we
produce in chunks.  Between chunks the application is SIGKILLed and restarted, and the
broker is SIGKILLed and restarted on the same data.  A read_committed consumer of the
output then sees, per word, counts that never go back and never exceed the true count,
ending at exactly the true count.

* default suite: one kill of each against Riverbed (about 10-20 s), and the same against
  Apache Kafka (``kafka`` marker: the application kill only, the reference broker cannot
  be restarted on its data; about 15-25 s, most of it the broker's and the application's
  JVMs starting) as the differential.  No other test runs a Kafka Streams application on
  Kafka (this run is what shows the oracle expects what Kafka does), so it stays in the
  default suite rather than behind ``kafka_variant`` (docs/testing.md);
* ``-m eos_heavy``: three kills of each, more input::

    .venv/bin/python -m pytest -p no:cacheprovider -m eos_heavy \
        tests/integration/transactions_eos/test_kafka_streams_eos.py

The application's jar is built once (Maven Central, javac) and cached under
``~/.cache/riverbed/kafka-streams-app/``; without ``mvn``/``java`` the tests skip.
"""

from __future__ import annotations

import random
import struct
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.testing.broker_process import BrokerProcess, free_port
from riverbed.testing.kafka_reference import KafkaReference
from riverbed.testing.kafka_streams_app import (
    AppBuild,
    StreamsApp,
    StreamsAppError,
    check_counts,
    ensure_app,
    true_counts,
)

INPUT, OUTPUT, PARTITIONS = "wc-lines", "wc-counts", 2
VOCABULARY = [f"w{i:02d}" for i in range(40)]
BROKER_CONFIG = {
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
}
RUN_TIMEOUT_S = 180.0


@pytest.fixture(scope="module")
def app_build() -> AppBuild:
    try:
        return ensure_app()
    except StreamsAppError as exc:
        pytest.skip(str(exc))


@dataclass
class Plan:
    """How a run kills: ``chunks`` of ``lines`` lines; after chunk i, ``kills[i]`` is
    "app", "broker" or "" (nothing)."""

    chunks: int
    lines: int
    kills: tuple[str, ...]


REDUCED = Plan(chunks=4, lines=150, kills=("", "app", "broker", ""))
HEAVY = Plan(chunks=8, lines=400, kills=("app", "broker", "app", "broker", "app", "broker", "", ""))
KAFKA = Plan(chunks=3, lines=150, kills=("", "app", ""))


def _lines(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choices(VOCABULARY, k=rng.randint(3, 9))) for _ in range(n)]


def _create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (INPUT, OUTPUT)])
    for future in futures.values():
        future.result(timeout=60)


class _Input:
    """The input's idempotent producer, kept from one batch of lines to the next: a new
    one spends ~0.5 s getting its producer id before its first batch goes out.  After a
    broker kill the next batch gets a new producer (:meth:`reset`)."""

    def __init__(self, bootstrap: Callable[[], str]) -> None:
        self._bootstrap = bootstrap
        self._producer: Producer | None = None

    def produce(self, lines: list[str]) -> None:
        """Send ``lines`` and return once every one is acknowledged."""
        if self._producer is None:
            self._producer = Producer(
                {"bootstrap.servers": self._bootstrap(), "enable.idempotence": True, "linger.ms": 5}
            )
        for i, line in enumerate(lines):
            self._producer.produce(INPUT, key=str(i).encode(), value=line.encode())
        assert self._producer.flush(120) == 0, "input not acknowledged"

    def reset(self) -> None:
        self._producer = None


class _Output:
    """A read_committed consumer of the output: ``seen[word]`` is its counts in order."""

    def __init__(self, bootstrap: str) -> None:
        self.seen: dict[str, list[int]] = defaultdict(list)
        self.records = 0
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "wc-checker",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "reconnect.backoff.max.ms": 1000,
            }
        )
        self._consumer.assign([TopicPartition(OUTPUT, p, 0) for p in range(PARTITIONS)])

    def poll(self) -> None:
        """One fetch: whatever arrives within 0.1 s."""
        for msg in self._consumer.consume(500, timeout=0.1):
            if msg.error() is not None:
                continue
            key, value = msg.key(), msg.value()
            assert key is not None and value is not None
            self.seen[key.decode()].append(struct.unpack(">q", value)[0])
            self.records += 1

    def wait_for(self, condition: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll until ``condition`` holds (checked after every fetch) or the deadline."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
            self.poll()

    def close(self) -> None:
        self._consumer.close()


def _run(
    plan: Plan,
    bootstrap: Callable[[], str],
    app: StreamsApp,
    kill_broker: Callable[[], None] | None,
    seed: int,
) -> None:
    rng = random.Random(seed)
    _create_topics(bootstrap())
    output = _Output(bootstrap())
    inputs = _Input(bootstrap)
    produced: list[str] = []
    try:
        app.start()
        app.wait_running(RUN_TIMEOUT_S)
        for chunk, kill in zip(range(plan.chunks), plan.kills, strict=True):
            lines = _lines(plan.lines, rng)
            half = len(lines) // 2
            before = output.records
            inputs.produce(lines[:half])
            produced += lines[:half]
            output.wait_for(lambda b=before: output.records > b, RUN_TIMEOUT_S, f"chunk {chunk}")
            # mid-run: the second half is acknowledged and being processed, its
            # transaction open, when the kill comes
            inputs.produce(lines[half:])
            produced += lines[half:]
            if kill == "app":
                app.kill()
                app.start()
            elif kill == "broker":
                assert kill_broker is not None
                kill_broker()
                inputs.reset()
            verdict = check_counts(output.seen, true_counts(produced), final=False)
            assert not verdict.problems, f"after chunk {chunk}: {verdict.problems[:5]}"
        expected = true_counts(produced)
        output.wait_for(
            lambda: check_counts(output.seen, expected).ok or not app.alive(),
            RUN_TIMEOUT_S,
            "the final counts",
        )
        verdict = check_counts(output.seen, expected)
        print(
            f"{len(produced)} lines, {sum(expected.values())} words, {output.records} counts"
            f" read, {app.starts} application start(s)"
        )
        assert verdict.ok, (
            f"problems {verdict.problems[:5]}, short {dict(list(verdict.missing.items())[:5])}"
            f"\n--- streams log:\n{app.tail()}"
        )
    finally:
        output.close()
        app.stop()


@pytest.fixture
def riverbed(tmp_path: Path) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(
        tmp_path / "data", free_port(), tmp_path / "broker.log", config=BROKER_CONFIG
    )
    broker.start(timeout_s=120)
    try:
        yield broker
    finally:
        broker.close()


def _riverbed_run(plan: Plan, broker: BrokerProcess, build: AppBuild, workdir: Path) -> None:
    def kill_broker() -> None:
        broker.kill()
        broker.start(timeout_s=120)

    app = StreamsApp(build, broker.bootstrap_servers, "wc-eos", INPUT, OUTPUT, workdir)
    try:
        _run(plan, lambda: broker.bootstrap_servers, app, kill_broker, seed=9)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- broker log:\n{broker.tail()}") from None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_streams_word_count_exactly_once_riverbed(
    riverbed: BrokerProcess, app_build: AppBuild, tmp_path: Path
) -> None:
    _riverbed_run(REDUCED, riverbed, app_build, tmp_path)


@pytest.mark.eos_heavy
@pytest.mark.timeout(1800)
def test_streams_word_count_exactly_once_riverbed_heavy(
    riverbed: BrokerProcess, app_build: AppBuild, tmp_path: Path
) -> None:
    _riverbed_run(HEAVY, riverbed, app_build, tmp_path)


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_streams_word_count_exactly_once_kafka(app_build: AppBuild, tmp_path: Path) -> None:
    with KafkaReference() as kafka:
        app = StreamsApp(app_build, kafka.bootstrap_servers, "wc-eos", INPUT, OUTPUT, tmp_path)
        _run(KAFKA, lambda: kafka.bootstrap_servers, app, None, seed=9)
