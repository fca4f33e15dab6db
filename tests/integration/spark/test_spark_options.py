"""Bad options fail before a query starts, with a message naming the problem."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from riverbed.errors import ConfigError
from riverbed.spark.admin import OffsetFetcher
from riverbed.spark.offsets import TopicPartition
from riverbed.spark.options import (
    Earliest,
    GlobalTimestamp,
    SpecificOffsets,
    Subscribe,
    parse_source_options,
)


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
    fetcher = OffsetFetcher({"bootstrap.servers": "nosuchhost.invalid:9092"}, 30_000)
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"all servers down.*nosuchhost\.invalid"):
        fetcher.check_reachable()
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


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "exactly one of"),
        ({"subscribe": "a", "endingOffsets": "latest"}, "not valid in streaming"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, "must be >= 1"),
        ({"subscribe": "a", "failOnDataLoss": "maybe"}, "true or false"),
        ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "tracks offsets itself"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"x":1}}'}, "is not an integer"),
        ({"subscribePattern": "("}, "is not a regex"),
        ({"assign": '{"a":"0"}'}, "assign: expected"),
    ],
)
def test_option_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_source_options({"kafka.bootstrap.servers": "x:1", **options}, streaming=True)


def test_options_are_case_insensitive_and_parsed_like_spark() -> None:
    parsed = parse_source_options(
        {
            "kafka.bootstrap.servers": "x:1",
            "SUBSCRIBE": "a, b",
            "startingOffsets": '{"a":{"0":23,"1":-2}}',
            "kafka.fetch.max.bytes": "1000",
        },
        streaming=True,
    )
    assert parsed.subscription == Subscribe(("a", "b"))
    assert parsed.starting == SpecificOffsets(
        ((TopicPartition("a", 0), 23), (TopicPartition("a", 1), -2))
    )
    assert parsed.kafka_config() == {"bootstrap.servers": "x:1", "fetch.max.bytes": "1000"}
    batch = parse_source_options(
        {"kafka.bootstrap.servers": "x:1", "subscribe": "a", "startingTimestamp": "5"},
        streaming=False,
    )
    assert batch.starting == GlobalTimestamp(5)
    assert (
        parse_source_options(
            {"kafka.bootstrap.servers": "x:1", "subscribe": "a"}, streaming=False
        ).starting
        == Earliest()
    )
