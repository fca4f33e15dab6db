"""Bad options fail before a query starts, with a message naming the problem.

Option parsing alone (no session, no broker) is tested in tests/unit/spark.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from riverbed.errors import ConfigError
from riverbed.spark.offset_lookup import OffsetLookup


def _load(spark: SparkSession, bootstrap: str, **options: str) -> None:
    (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**options)
        .load()
    )


def test_unknown_option_is_named(spark: SparkSession, bootstrap: str) -> None:
    with pytest.raises(Exception, match="unknown option 'subscrib'"):
        _load(spark, bootstrap, subscrib="t")


def test_malformed_starting_offsets_is_named(spark: SparkSession, bootstrap: str) -> None:
    with pytest.raises(Exception, match="startingOffsets: malformed JSON"):
        _load(spark, bootstrap, subscribe="t", startingOffsets='{"t": {0: 1}')


def test_unreachable_bootstrap_servers_fail_fast(spark: SparkSession) -> None:
    # Default kafkaConsumer.pollTimeoutMs (30 s): a refused connection must not wait for it.
    started = time.monotonic()
    with pytest.raises(Exception, match=r"cannot reach kafka.bootstrap.servers='127.0.0.1:1'"):
        _load(spark, "127.0.0.1:1", subscribe="t")
    assert time.monotonic() - started < 5


def test_unreachable_bootstrap_servers_probe_names_the_cause() -> None:
    lookup = OffsetLookup({"bootstrap.servers": "nosuchhost.invalid:9092"}, 30_000)
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"all servers down.*nosuchhost\.invalid"):
        lookup.check_reachable()
    assert time.monotonic() - started < 5


def test_starting_timestamp_without_records_fails_or_starts_at_latest(
    spark: SparkSession, bootstrap: str, topic: Callable[[int], str]
) -> None:
    # No record at or after the timestamp: ListOffsets answers -1.
    from .conftest import produce

    name = topic(1)
    produce(bootstrap, name, [(0, None, b"old")])
    reader = spark.read.format("riverbed").option("kafka.bootstrap.servers", bootstrap)
    reader = reader.option("subscribe", name).option("startingTimestamp", "4102444800000")
    with pytest.raises(
        Exception, match=rf"no record at or after the starting timestamp in {name}-0"
    ):
        reader.load().collect()
    lenient = reader.option("startingOffsetsByTimestampStrategy", "latest").load()
    assert lenient.count() == 0
