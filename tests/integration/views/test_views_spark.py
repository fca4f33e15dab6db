"""Views fed by a Spark streaming query on the riverbed source through
:func:`riverbed.views.foreach_batch`: several micro-batches give the expected table, and
the whole topic read again by a second query (a fresh checkpoint: every micro-batch
re-run) changes nothing."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import riverbed.spark  # noqa: E402
from riverbed.testing.broker_process import BrokerProcess  # noqa: E402
from riverbed.views import foreach_batch  # noqa: E402
from riverbed.views.analytics import AnalyticsView  # noqa: E402
from riverbed.views.search import SearchView  # noqa: E402

from .views_changelog import changelog  # noqa: E402

TOPIC = "cdc.main.accounts"


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("riverbed-views-test")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    riverbed.spark.register(session)
    yield session
    session.stop()


def _run_query(spark: SparkSession, bootstrap: str, views: list, checkpoint: Path) -> None:  # type: ignore[type-arg]
    query = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "150")
        .load()
        .writeStream.foreachBatch(foreach_batch(views))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()


def test_foreach_batch_live_and_rerun(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    records, expected = changelog(users=25, steps=500, seed=5)
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=2)])[TOPIC].result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for key, value in records:
        producer.produce(TOPIC, key=key, value=value)
    assert producer.flush(60) == 0

    search, analytics = SearchView(tmp_path / "s.db"), AnalyticsView(tmp_path / "a.duckdb")
    try:
        _run_query(spark, bootstrap, [search, analytics], tmp_path / "ckpt1")
        assert search.snapshot() == analytics.snapshot() == expected
        marks = search.high_water_offsets()
        assert sum(o + 1 for o in marks.values()) == len(records)
        _run_query(spark, bootstrap, [search, analytics], tmp_path / "ckpt2")
        assert search.snapshot() == analytics.snapshot() == expected
        assert search.high_water_offsets() == analytics.high_water_offsets() == marks
    finally:
        search.close()
        analytics.close()
