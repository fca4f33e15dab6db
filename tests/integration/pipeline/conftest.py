"""One SparkSession and one embedded Riverbed broker for the pipeline tests.

The session is built with the same settings as tests/integration/spark/conftest.py and
``getOrCreate`` -- when both folders run in one pytest process they share one session.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from riverbed.demo.clickstream import create_topics
from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("pipeline-broker")) as running:
        yield running


@pytest.fixture(scope="session")
def bootstrap(broker: EmbeddedBroker) -> str:
    return broker.bootstrap_servers


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from riverbed.pipelines.pageviews import local_spark

    session = local_spark("riverbed-tests")
    yield session
    session.stop()


@pytest.fixture
def new_topic(bootstrap: str) -> Callable[[int], str]:
    """``new_topic(n)`` creates a topic of ``n`` partitions, retention unlimited."""

    def create(partitions: int = 2) -> str:
        name = f"pv-{uuid.uuid4().hex[:10]}"
        create_topics({"bootstrap.servers": bootstrap}, [name], partitions)
        return name

    return create


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
