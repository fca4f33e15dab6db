"""One SparkSession (local[2]) and one librdkafka mock cluster for all Spark tests."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest

pyspark = pytest.importorskip("pyspark")

from confluent_kafka import Producer  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import riverbed.spark  # noqa: E402

from .mock_cluster import MockCluster  # noqa: E402


@pytest.fixture(scope="session")
def cluster() -> Iterator[MockCluster]:
    mock = MockCluster()
    yield mock
    mock.close()


@pytest.fixture(scope="session")
def bootstrap(cluster: MockCluster) -> str:
    return cluster.bootstrap_servers


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("riverbed-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    riverbed.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def topic(cluster: MockCluster) -> Callable[[int], str]:
    """``topic(n)`` creates a fresh topic of ``n`` partitions and returns its name."""

    def create(partitions: int = 2) -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        cluster.create_topic(name, partitions)
        return name

    return create


def produce(
    bootstrap: str,
    topic: str,
    records: list[tuple[int, bytes | None, bytes | None]],
    *,
    timestamp_ms: int | None = None,
    headers: list[tuple[str, str | bytes | None]] | None = None,
) -> None:
    """Produce ``(partition, key, value)`` records and wait until all are acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for partition, key, value in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            partition=partition,
            timestamp=timestamp_ms or 0,
            headers=headers,
        )
    assert producer.flush(30) == 0
