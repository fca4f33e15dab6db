"""Fixtures of the pipelines_ops tests (approximate analytics, late policies, clock skew):
one local SparkSession per test process, RocksDB state store as the examples' runner."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SPARK_CONFIG = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.noDataMicroBatches.enabled": "true",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from riverbed.spark.session import local_session

    session = local_session("riverbed-ops-tests", config=SPARK_CONFIG, register=False)
    yield session
    session.stop()
