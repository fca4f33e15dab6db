"""Fixtures for issue 16's compatibility fixes: each behaviour is checked against Apache
Kafka (``kafka`` marker; jars from Maven Central, cached) and Riverbed with the same client
calls.  ``server`` is parametrised over both; ``-m "not kafka"`` runs Riverbed alone."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from riverbed.testing.compat_recording import (  # noqa: F401  (docs/compatibility.md's table)
    pytest_runtest_makereport,
    pytest_sessionfinish,
)
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.kafka_reference import KafkaReference

SERVERS = [
    pytest.param("fixes_kafka", marks=pytest.mark.kafka, id="kafka"),
    pytest.param("fixes_riverbed", id="riverbed"),
]


@pytest.fixture(scope="session")
def fixes_kafka() -> Iterator[KafkaReference]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    with KafkaReference() as broker:
        yield broker


@pytest.fixture(scope="session")
def fixes_riverbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("compat-fixes")) as broker:
        yield broker


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)
