"""Existing Spark pipelines run against Riverbed unchanged: Spark's JVM Kafka connector
(spark-sql-kafka-0-10 from Maven Central) reads from and writes to the broker.

Parametrised over brokers: ``riverbed`` (embedded) always; ``kafka`` (the real Apache
Kafka reference broker, marked ``kafka``) proves the job itself is right.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from riverbed.demo.clickstream import create_topics

from .spark_kafka_jars import connector_jars
from .topics import read_topic

JOB = Path(__file__).with_name("jvm_kafka_job.py")


@pytest.fixture(params=["riverbed", pytest.param("kafka", marks=pytest.mark.kafka)])
def servers(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "riverbed":
        yield request.getfixturevalue("bootstrap")
        return
    from riverbed.testing.kafka_reference import KafkaReference

    with KafkaReference() as kafka:
        yield kafka.bootstrap_servers


# The Kafka run (a JVM broker, then the same Spark job: minutes on a loaded 2-core box) only
# re-proves the job: gated, -m kafka runs it (tests/conftest.py).
@pytest.mark.kafka_variant
def test_spark_kafka_connector_reads_and_writes(servers: str, tmp_path: Path) -> None:
    version, jars = connector_jars()
    source, target = f"jvm-in-{uuid.uuid4().hex[:8]}", f"jvm-out-{uuid.uuid4().hex[:8]}"
    create_topics({"bootstrap.servers": servers}, [source, target], 2)
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 5})
    sent = [(f"k{i}", f"v{i}", i % 2) for i in range(40)]
    for key, value, partition in sent:
        producer.produce(source, key=key, value=value, partition=partition)
    assert producer.flush(30) == 0
    proc = subprocess.run(
        [
            sys.executable,
            str(JOB),
            servers,
            source,
            target,
            str(tmp_path / "cp"),
            ",".join(str(j) for j in jars),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"connector {version}:\n{proc.stderr[-6000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["error"] is None, result["error"]
    assert sorted((k, v, p) for k, v, p, _ in result["read"]) == sorted(sent)
    assert result["written"] == len(sent)
    copied = read_topic(servers, target)
    assert sorted(((r.key or b"").decode(), (r.value or b"").decode()) for r in copied) == sorted(
        (k, v.upper()) for k, v, _ in sent
    )
