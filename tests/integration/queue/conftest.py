"""Fixtures for the client side of share groups (riverbed.queue, webhook, share-groups CLI).

``share_bootstrap`` (session): the bootstrap address of a broker with share groups.  Today
that is Apache Kafka 4.4.0 (jars from Maven Central, cached under
~/.cache/riverbed/kafka-4.4.0; marked ``kafka``) with a 2 s acquisition lock, so a crashed
consumer's records come back quickly.  ``queue_names`` gives a fresh topic (2 partitions)
and share group whose ``share.auto.offset.reset`` is ``earliest``, so records produced
before the consumers join are delivered.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator

import pytest
from queue_helpers import QueueNames

from riverbed.testing.kafka_share_reference import create_topic, set_share_group_config, share_kafka

LOCK_DURATION_MS = 2_000


@pytest.fixture(scope="session")
def share_bootstrap() -> Iterator[str]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    with share_kafka(lock_duration_ms=LOCK_DURATION_MS) as broker:
        yield broker.bootstrap_servers


_counter = itertools.count()


@pytest.fixture
def queue_names(share_bootstrap: str, request: pytest.FixtureRequest) -> QueueNames:
    n = next(_counter)
    base = request.node.name.replace("[", "-").replace("]", "")[:40]
    names = QueueNames(share_bootstrap, f"q-{base}-{n}", f"g-{base}-{n}")
    create_topic(share_bootstrap, names.topic, partitions=2)
    set_share_group_config(share_bootstrap, names.group, {"share.auto.offset.reset": "earliest"})
    return names
