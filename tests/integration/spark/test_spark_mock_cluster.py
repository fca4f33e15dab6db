"""One round trip against librdkafka's mock cluster: a second Kafka implementation.

The rest of the suite runs against Riverbed's broker; this test keeps the source honest
about working unchanged against another Kafka-protocol cluster (see mock_cluster.py for
what the mock lacks).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from .conftest import produce
from .mock_cluster import MockCluster


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    cluster = MockCluster()
    yield cluster
    cluster.close()


def test_source_and_sink_work_against_librdkafka_mock_cluster(
    spark: SparkSession, mock: MockCluster
) -> None:
    mock.create_topic("mock-in", 2)
    mock.create_topic("mock-out", 1)
    servers = mock.bootstrap_servers
    produce(servers, "mock-in", [(i % 2, b"k%d" % i, b"v%d" % i) for i in range(8)])
    rows = (
        spark.read.format("riverbed")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", "mock-in")
        .load()
    )
    rows.select("key", "value").write.format("riverbed").mode("append").option(
        "kafka.bootstrap.servers", servers
    ).option("topic", "mock-out").save()
    copied = (
        spark.read.format("riverbed")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", "mock-out")
        .load()
        .collect()
    )
    assert sorted((r["key"], r["value"]) for r in copied) == [
        (b"k%d" % i, b"v%d" % i) for i in range(8)
    ]
