"""Options parsed as Spark's Kafka source parses them, and option errors (no Spark, no broker)."""

from __future__ import annotations

import pytest

from riverbed.errors import ConfigError
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.spark.options import (
    Earliest,
    GlobalTimestamp,
    SpecificOffsets,
    Subscribe,
    parse_source_options,
)


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
