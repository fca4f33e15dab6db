"""Kafka's Java ``KafkaShareConsumer`` (4.4.0) as a share group member, beside confluent-kafka.

Two Java members (:mod:`riverbed.testing.java_share_consumer`, explicit acknowledgement)
and one confluent-kafka ``ShareConsumer`` share one 1-partition topic.  Values end in
``a`` (ACCEPT), ``r`` (RELEASE on the first delivery, ACCEPT after) or ``x`` (REJECT).
Checked, from every member's deliveries together:

- all three members get records, and no (offset, delivery count) is delivered twice: no
  record is held by two members at once;
- a RELEASEd record comes back once, with delivery count 2, and is ACCEPTed;
- a REJECTed record is never delivered again;
- every ACCEPTed record is delivered exactly once overall.

Records are produced in small batches while the members run, until each has some.  The
record lock is 10 s (no lock expires under load; releases are explicit).  The default
suite runs it against a ``riverbed broker`` process; ``kafka`` marker: the same against
Apache Kafka 4.4 as the differential.  The Java program is built once (Maven Central,
javac) and cached under ``~/.cache/riverbed/java-share-consumer/``; without
``mvn``/``java`` the tests skip.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from riverbed.testing.java_share_consumer import (
    AppBuild,
    Delivery,
    JavaShareConsumer,
    JavaShareConsumerError,
    ensure_app,
)
from riverbed.testing.kafka_share_reference import (
    create_topic,
    set_share_group_config,
)

LOCK_MS = 10_000
RIVERBED_CONFIG = {
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.heartbeat.interval.ms": "500",
    "group.share.session.timeout.ms": "10000",
    "group.consumer.heartbeat.interval.ms": "500",
}
BATCH = 6  # one batch: values ending a, r, a, a, x, a
MIN_RECORDS, MAX_RECORDS = 60, 600
RUN_TIMEOUT_S = 150.0
_names = itertools.count()


@pytest.fixture(scope="module")
def app_build() -> AppBuild:
    try:
        return ensure_app()
    except JavaShareConsumerError as exc:
        pytest.skip(str(exc))


def _value(i: int) -> str:
    return f"v{i:04d}" + "araaxa"[i % BATCH]


def _python_poll(consumer: ShareConsumer, timeout_s: float) -> list[Delivery]:
    out = []
    msgs = consumer.poll(timeout_s)
    for m in msgs:
        assert m.error() is None, m.error()
        value = (m.value() or b"").decode()
        count = m.delivery_count()
        if value.endswith("x"):
            action, ack = "REJECT", AcknowledgeType.REJECT
        elif value.endswith("r") and count <= 1:
            action, ack = "RELEASE", AcknowledgeType.RELEASE
        else:
            action, ack = "ACCEPT", AcknowledgeType.ACCEPT
        consumer.acknowledge(m, ack)
        out.append(Delivery(m.partition() or 0, m.offset() or 0, value, count, action, "python"))
    if msgs:
        consumer.commit_sync(30)
    return out


def _check(deliveries: list[Delivery], produced: list[str]) -> None:
    by_consumer = defaultdict(list)
    by_value: dict[str, list[Delivery]] = defaultdict(list)
    for d in deliveries:
        by_consumer[d.consumer].append(d)
        by_value[d.value].append(d)
    assert set(by_consumer) == {"java-0", "java-1", "python"}, {
        k: len(v) for k, v in by_consumer.items()
    }
    held = [(d.offset, d.delivery_count) for d in deliveries]
    twice = [k for k in set(held) if held.count(k) > 1]
    assert not twice, f"(offset, delivery count) delivered twice: {sorted(twice)[:10]}"
    assert set(by_value) == set(produced), sorted(set(produced) ^ set(by_value))[:10]
    for value in produced:
        got = sorted((d.delivery_count, d.action) for d in by_value[value])
        if value.endswith("x"):
            assert got == [(1, "REJECT")], (value, got)
        elif value.endswith("r"):
            assert got == [(1, "RELEASE"), (2, "ACCEPT")], (value, got)
        else:
            assert got == [(1, "ACCEPT")], (value, got)


def _run(bootstrap: str, build: AppBuild, workdir: Path) -> None:
    n = next(_names)
    topic, group = f"java-share-{n}", f"java-share-group-{n}"
    create_topic(bootstrap, topic, 1)
    set_share_group_config(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    javas = [
        JavaShareConsumer(
            build,
            bootstrap,
            group,
            topic,
            workdir,
            f"java-{i}",
            idle_polls=12,
            max_seconds=int(RUN_TIMEOUT_S),
            poll_pause_ms=50,
        )
        for i in range(2)
    ]
    python = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": 5,
        }
    )
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    produced: list[str] = []
    mine: list[Delivery] = []
    try:
        for java in javas:
            java.start()
        python.subscribe([topic])
        deadline = time.monotonic() + RUN_TIMEOUT_S

        def everyone() -> list[Delivery]:
            return [d for j in javas for d in j.deliveries()] + mine

        def status() -> str:
            return f"produced {len(produced)}, python {len(mine)}\n" + "\n".join(
                j.tail() for j in javas
            )

        # produce in batches until every member has records (and at least MIN_RECORDS)
        last_batch = 0.0
        while len(produced) < MIN_RECORDS or not (mine and all(j.deliveries() for j in javas)):
            assert time.monotonic() < deadline, status()
            assert len(produced) < MAX_RECORDS, f"not every member got records: {status()}"
            for j in javas:
                assert not j.finished(), f"{j.name} exited early:\n{status()}"
            if time.monotonic() - last_batch > 0.3:
                for _ in range(BATCH):
                    produced.append(_value(len(produced)))
                    producer.produce(topic, value=produced[-1].encode(), partition=0)
                producer.flush(30)
                last_batch = time.monotonic()
            mine += _python_poll(python, 0.1)

        # then consume until every record reached its final state
        def settled() -> bool:
            final = {d.value for d in everyone() if d.action != "RELEASE"}
            return final >= set(produced)

        while not settled():
            assert time.monotonic() < deadline, f"not settled: {status()}"
            mine += _python_poll(python, 0.2)
        python.close()
        for j in javas:
            while not j.finished():
                assert time.monotonic() < deadline + 30, f"{j.name} did not exit: {status()}"
                time.sleep(0.1)
            assert j.closed_cleanly(), j.tail()
        _check(everyone(), produced)
    finally:
        for j in javas:
            j.kill()
        with contextlib.suppress(Exception):  # closed already, or the test failed already
            python.close()


def test_java_share_consumers_with_confluent_riverbed(
    riverbed_bootstrap: str, app_build: AppBuild, tmp_path: Path
) -> None:
    _run(riverbed_bootstrap, app_build, tmp_path / "java")


# The differential run on Kafka 4.4 (~40 s: its JVM and the members') is gated: -m kafka
# (tests/conftest.py); the Riverbed run above is the default suite's.
@pytest.mark.kafka
@pytest.mark.kafka_variant
def test_java_share_consumers_with_confluent_kafka(
    kafka_bootstrap: str, app_build: AppBuild, tmp_path: Path
) -> None:
    _run(kafka_bootstrap, app_build, tmp_path / "java")
