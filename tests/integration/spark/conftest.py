"""One SparkSession (local[2]) and one embedded Riverbed broker for all Spark tests.

The broker (:class:`~riverbed.testing.embedded.EmbeddedBroker`) is session-scoped, like
the SparkSession; each test creates its own topics (``topic(n)``) with unlimited time
retention, since tests produce records with timestamps far in the past.  The broker is
reached only over the wire, exactly as a Kafka cluster would be.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest

pyspark = pytest.importorskip("pyspark")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import riverbed.spark  # noqa: E402
from riverbed.testing import waiting  # noqa: E402
from riverbed.testing.embedded import EmbeddedBroker  # noqa: E402


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("spark-broker")) as running:
        yield running


@pytest.fixture(scope="session")
def bootstrap(broker: EmbeddedBroker) -> str:
    return broker.bootstrap_servers


@pytest.fixture(scope="session")
def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


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
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    riverbed.spark.register(session)
    yield session
    session.stop()


def create_topic(admin: AdminClient, partitions: int, **config: str) -> str:
    """Create a fresh topic (time retention off unless ``config`` says otherwise)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    settings = {"retention.ms": "-1", **config}
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=settings)])
    futures[name].result(30)
    return name


@pytest.fixture
def topic(admin: AdminClient) -> Callable[[int], str]:
    """``topic(n)`` creates a fresh topic of ``n`` partitions and returns its name."""

    def create(partitions: int = 2) -> str:
        return create_topic(admin, partitions)

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


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 90) -> None:
    """:func:`riverbed.testing.waiting.wait_until` with ``what`` first, 90 s by default."""
    waiting.wait_until(condition, timeout_s, what)
