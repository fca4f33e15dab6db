"""Kafka's Java producer (kafka-clients 4.1.1) running transactions against an embedded
broker: the scenario of tests/unit/coordinator/transactions/java/TxnScenario.java (a
transaction that commits a record and consumer offsets, then an aborted one).  ApiVersions
finalizes ``transaction.version`` 2, so the client speaks transaction version 2: Produce
v12 adds the partition implicitly, TxnOffsetCommit v5 the group's, EndTxn v5 bumps the
epoch."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.kafka_reference import cache_dir, resolve_jars

SOURCE = (
    Path(__file__).parents[2]
    / "unit"
    / "coordinator"
    / "transactions"
    / "java"
    / "TxnScenario.java"
)


def _classes() -> tuple[Path, Path]:
    javac = shutil.which("javac")
    if javac is None or shutil.which("mvn") is None:
        pytest.skip("javac/mvn not on PATH")
    libs = resolve_jars()
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    classes = cache_dir() / "java-classes" / f"txn-{digest}"
    if not (classes / "TxnScenario.class").exists():
        tmp = classes.with_name(classes.name + f".tmp-{uuid.uuid4().hex[:6]}")
        tmp.mkdir(parents=True)
        subprocess.run(
            [javac, "-d", str(tmp), "-cp", str(libs / "*"), str(SOURCE)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        shutil.rmtree(classes, ignore_errors=True)
        tmp.rename(classes)
    return classes, libs


def test_java_producer_commits_offsets_and_aborts(broker: EmbeddedBroker) -> None:
    classes, libs = _classes()
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("java-txn", 1, 1)])["java-txn"].result(30)
    proc = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{classes}:{libs / '*'}",
            "TxnScenario",
            bootstrap,
            "java-txn",
            "java-tx",
            "java-group",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-4000:]
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "java-group",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    committed = consumer.committed([TopicPartition("java-txn", 0)], 10)
    assert committed[0].offset == 1
    consumer.assign([TopicPartition("java-txn", 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            break  # end of the partition (read_committed: the LSO)
        values.append(msg.value() or b"")
    consumer.close()
    assert values == [b"v"]  # "w" was aborted
