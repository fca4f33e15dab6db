"""Fixtures for the client side of share groups (riverbed.queue, webhook, share-groups CLI).

``share_bootstrap`` is parametrised over the brokers with share groups the client code must
work against, each started once per session with a 2 s acquisition lock and a 10 s share
session timeout, so a crashed consumer's records come back quickly:

- ``kafka``: Apache Kafka 4.4.0 (jars from Maven Central, cached under
  ~/.cache/riverbed/kafka-4.4.0), marked ``kafka``;
- ``riverbed``: a ``riverbed broker`` child process.

``-m "not kafka"`` runs Riverbed only.  ``queue_names`` gives a fresh topic (2 partitions)
and a share group whose ``share.auto.offset.reset`` is ``earliest``, so records produced
before the consumers join are delivered.  ``server_name`` says which broker runs.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator

import pytest
from queue_helpers import QueueNames

from riverbed.testing.broker_process import BrokerProcess, free_port
from riverbed.testing.kafka_share_reference import (
    create_topic,
    enable_dead_letters,
    set_share_group_config,
    share_kafka,
)

LOCK_DURATION_MS = 2_000
RIVERBED_CONFIG = {
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.share.record.lock.duration.ms": str(LOCK_DURATION_MS),
    "group.share.session.timeout.ms": "10000",
    "group.share.heartbeat.interval.ms": "2000",
    "group.consumer.heartbeat.interval.ms": "500",
}


@pytest.fixture(scope="session")
def kafka_share_bootstrap() -> Iterator[str]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    with share_kafka(lock_duration_ms=LOCK_DURATION_MS) as broker:
        yield broker.bootstrap_servers


@pytest.fixture(scope="session")
def riverbed_share_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("riverbed-queue")
    broker = BrokerProcess(
        root / "data", free_port(), root / "broker.log", RIVERBED_CONFIG, "WARNING"
    )
    broker.start(timeout_s=180)
    try:
        yield broker.bootstrap_servers
    finally:
        broker.close()


@pytest.fixture(
    params=[
        pytest.param("kafka_share_bootstrap", marks=pytest.mark.kafka, id="kafka"),
        pytest.param("riverbed_share_bootstrap", id="riverbed"),
    ]
)
def share_bootstrap(request: pytest.FixtureRequest) -> str:
    bootstrap: str = request.getfixturevalue(request.param)
    return bootstrap


@pytest.fixture
def server_name(share_bootstrap: str, request: pytest.FixtureRequest) -> str:
    return "kafka" if "kafka" in request.node.callspec.id else "riverbed"


@pytest.fixture
def dead_letter_topic(queue_names: QueueNames) -> str:
    """The group's dead-letter topic (KIP-1191), on either broker: ``dlq.<topic>`` with
    ``errors.deadletterqueue.group.enable=true``, named by the group's config."""
    topic = f"dlq.{queue_names.topic}"
    enable_dead_letters(queue_names.bootstrap, queue_names.group, topic)
    return topic


_counter = itertools.count()


@pytest.fixture
def queue_names(share_bootstrap: str, request: pytest.FixtureRequest) -> QueueNames:
    n = next(_counter)
    base = request.node.name.replace("[", "-").replace("]", "")[:40]
    names = QueueNames(share_bootstrap, f"q-{base}-{n}", f"g-{base}-{n}")
    create_topic(share_bootstrap, names.topic, partitions=2)
    set_share_group_config(share_bootstrap, names.group, {"share.auto.offset.reset": "earliest"})
    return names
