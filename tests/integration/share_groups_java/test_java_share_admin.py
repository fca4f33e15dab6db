"""Kafka's Java Admin (4.4.0) share group offsets calls against Riverbed and Kafka 4.4.

``tests/compat/java_share_admin`` (built once with Maven Central jars and javac, cached under
``~/.cache/riverbed/java-share-admin/``) runs one scenario and prints one observation per
step: ``alterShareGroupOffsets`` of a new group, ``listShareGroupOffsets`` (all and named,
an unknown topic named), an alter of an unknown topic, ``deleteShareGroupOffsets`` of the
topic and an unknown one, listings after the delete, a delete for an unknown group.  Both
brokers must give the same observations (:data:`EXPECTED`, Kafka 4.4's).  The Riverbed run
is in the default suite (~10 s); the Kafka run is gated: ``-m kafka``.  Without
``mvn``/``java`` the tests skip.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer

from riverbed.testing.java_app import JavaAppBuild, JavaAppError, build_java_app
from riverbed.testing.kafka_share_reference import create_topic

PROJECT = Path(__file__).resolve().parents[2] / "compat" / "java_share_admin"
MAIN_CLASS = "dev.riverbed.share.ShareAdminApp"
RIVERBED_CONFIG = {
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
}
EXPECTED = {
    "alter sa-0": "ok",
    "alter sa-1": "ok",
    "alter all": "ok",
    "list all": "sa-0=2/0/3 sa-1=4/0/1",
    "list named": "sa-1=4/0/1 sa-missing-0=null",  # the client maps start -1 to null
    "alter unknown topic": "UnknownTopicOrPartitionException",
    "delete sa": "ok",
    "delete unknown topic": "UnknownTopicOrPartitionException",
    "list after delete": "(none)",
    "list named after delete": "sa-0=null",
    "delete unknown group": "GroupIdNotFoundException",
    "list unknown group": "(none)",
}


@pytest.fixture(scope="module")
def app_build() -> JavaAppBuild:
    try:
        return build_java_app(PROJECT, "java-share-admin")
    except JavaAppError as exc:
        pytest.skip(str(exc))


def _observe(bootstrap: str, build: JavaAppBuild) -> dict[str, str]:
    create_topic(bootstrap, "sa", 2)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("sa", value=b"v%d" % i, partition=i % 2)
    assert producer.flush(60) == 0
    done = subprocess.run(
        [
            "java",
            "-cp",
            build.classpath,
            MAIN_CLASS,
            bootstrap,
            "sag",
            "sa",
            "sa-missing",
            "sa-none",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)


def test_java_admin_share_offsets_riverbed(
    riverbed_bootstrap: str, app_build: JavaAppBuild
) -> None:
    assert _observe(riverbed_bootstrap, app_build) == EXPECTED


@pytest.mark.kafka
@pytest.mark.kafka_variant
def test_java_admin_share_offsets_kafka(kafka_bootstrap: str, app_build: JavaAppBuild) -> None:
    assert _observe(kafka_bootstrap, app_build) == EXPECTED
