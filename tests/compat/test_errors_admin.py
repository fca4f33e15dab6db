"""ListOffsets by timestamp, topic administration, and the error codes of bad inputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from riverbed.testing.scenarios import admin, aio, confluent, kafka_python, raw
from riverbed.testing.scenarios.compare import compare, diff, normalise
from riverbed.testing.scenarios.java import JavaClient
from riverbed.testing.scenarios.records import Record, make_records

BASE = 1_700_000_000_000
# Records stamped in 2023 are past the default retention.ms (7 days): the next retention
# check (Riverbed every 30 s, Kafka every 5 min) may delete them in the middle of a test,
# and a lookup then answers "none" (seen in CI).  The topics that keep them keep them.
KEEP = {"retention.ms": "-1"}


def _offsets_topic(server: Any, new_topic: Callable[..., str]) -> str:
    topic = new_topic(1, KEEP)
    # offsets 0..9 at BASE, BASE+1000, ... BASE+9000
    delivered = confluent.produce(
        server.bootstrap_servers, topic, make_records(10, partitions=1, base_timestamp_ms=BASE)
    )
    # Checked here, so that a failed produce is not reported as a wrong lookup.
    assert delivered == [(0, offset) for offset in range(10)], delivered
    return topic


QUERIES = [0, BASE, BASE + 1, BASE + 5000, BASE + 5500, BASE + 9000, BASE + 9001]
EXPECTED = {
    0: 0,
    BASE: 0,
    BASE + 1: 1,
    BASE + 5000: 5,
    BASE + 5500: 6,
    BASE + 9000: 9,
    BASE + 9001: None,
}


@pytest.mark.parametrize(
    "client",
    [confluent.offsets_for_times, kafka_python.offsets_for_times, aio.offsets_for_times],
    ids=["confluent", "kafka-python", "aiokafka"],
)
def test_offsets_for_times(
    server: Any, new_topic: Callable[..., str], client: Callable[..., Any]
) -> None:
    topic = _offsets_topic(server, new_topic)
    assert client(server.bootstrap_servers, topic, 0, QUERIES) == EXPECTED


def test_offsets_for_times_java(
    server: Any, new_topic: Callable[..., str], java_client: JavaClient
) -> None:
    topic = _offsets_topic(server, new_topic)
    assert java_client.offsets_for_times(server.bootstrap_servers, topic, 0, QUERIES) == EXPECTED


COMMON_ADMIN = {
    "create": None,
    "create_existing": "TOPIC_ALREADY_EXISTS",
    "invalid_name": "INVALID_TOPIC_EXCEPTION",
    "describe": {
        "cleanup.policy": "compact",
        "retention.ms": "3600000",
        "max.message.bytes": "1048588",
    },
    "after_incremental": {
        "cleanup.policy": "compact",
        "retention.ms": "604800000",
        "max.message.bytes": "2048",
    },
    "create_partitions": None,
    "decrease_partitions": "INVALID_PARTITIONS",
    "partitions": 5,
    "delete": None,
    "exists_after_delete": False,
    "delete_unknown": "UNKNOWN_TOPIC_OR_PARTITION",
}


def test_confluent_admin_lifecycle(server: Any, request: pytest.FixtureRequest) -> None:
    got = admin.confluent_admin_lifecycle(server.bootstrap_servers, "adm-confluent")
    # Legacy AlterConfigs replaces the whole set: unnamed keys go back to their defaults.
    after_alter = {
        "cleanup.policy": "delete",
        "retention.ms": "7200000",
        "max.message.bytes": "1048588",
    }
    assert got == {**COMMON_ADMIN, "after_alter": after_alter}


def test_kafka_python_admin_lifecycle(server: Any) -> None:
    got = admin.kafka_python_admin_lifecycle(server.bootstrap_servers, "adm-kafka-python")
    # kafka-python re-sends the other modified keys with a legacy AlterConfigs.
    after_alter = {
        "cleanup.policy": "compact",
        "retention.ms": "7200000",
        "max.message.bytes": "2048",
    }
    assert got == {**COMMON_ADMIN, "after_alter": after_alter}


def test_raw_produce_errors(server: Any, new_topic: Callable[..., str]) -> None:
    b = server.bootstrap_servers
    topic = new_topic(3)
    assert raw.produce_error(b, topic, 0) == "NONE"
    assert raw.produce_error(b, topic, 0, acks=2) == "INVALID_REQUIRED_ACKS"
    assert raw.produce_error(b, topic, 99) == "UNKNOWN_TOPIC_OR_PARTITION"
    # Unknown (and invalid) topic names answer UNKNOWN_TOPIC_OR_PARTITION, before acks.
    assert raw.produce_error(b, topic + "-missing", 0, acks=2) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert raw.produce_error(b, "bad name!", 0) == "UNKNOWN_TOPIC_OR_PARTITION"
    small = new_topic(1, {"max.message.bytes": "1024"})
    assert raw.produce_error(b, small, 0, records=raw.record_batch(b"x" * 4096)) == (
        "MESSAGE_TOO_LARGE"
    )


def test_message_too_large_through_client(server: Any, new_topic: Callable[..., str]) -> None:
    small = new_topic(1, {"max.message.bytes": "1024"})
    got = confluent.produce(server.bootstrap_servers, small, [Record(0, b"k", b"x" * 4096)])
    assert got == ["MESSAGE_TOO_LARGE"]


@pytest.mark.parametrize(
    "client",
    [confluent.consume_out_of_range, kafka_python.consume_out_of_range],
    ids=["confluent", "kafka-python"],
)
def test_fetch_out_of_range(
    server: Any, new_topic: Callable[..., str], client: Callable[..., str]
) -> None:
    topic = new_topic(1)
    confluent.produce(server.bootstrap_servers, topic, make_records(3, partitions=1))
    assert raw.fetch_error(server.bootstrap_servers, topic, 0, 1000) == "OFFSET_OUT_OF_RANGE"
    assert raw.fetch_error(server.bootstrap_servers, topic, 0, 3) == "NONE"
    assert client(server.bootstrap_servers, topic, 0, 1000) == "OFFSET_OUT_OF_RANGE"


def test_compare_normalises_what_may_differ() -> None:
    a = {"cluster_id": "x", "err": "at 127.0.0.1:9092", "r": [1, {"throttle_time_ms": 5}]}
    b = {"cluster_id": "y", "err": "at 127.0.0.1:40000", "r": [1, {"throttle_time_ms": 0}]}
    assert diff(normalise(a), normalise(b)) == []
    assert diff(normalise({"v": [1, 2]}), normalise({"v": [1, 3]})) == ["$.v[1]: 2 != 3"]


@pytest.mark.kafka
def test_compare_same_server_twice_is_clean(kafka_reference: Any) -> None:
    """The differential runner against one broker twice: no differences once normalised."""
    b = kafka_reference.bootstrap_servers
    names = iter(["cmp-a", "cmp-b"])

    def scenario(bootstrap: str) -> Any:
        topic = next(names)
        admin.create_topic(bootstrap, topic, 3)
        return confluent.roundtrip(bootstrap, topic, "lz4", make_records(12))

    assert compare(scenario, b, b) == []


def test_list_offsets_specs_max_timestamp(server: Any, new_topic: Callable[..., str]) -> None:
    """ListOffsets -2/-1/-3 through the admin client: -3 is the *first* record carrying the
    largest timestamp, inside a compressed batch, although a later batch ties it."""
    b = server.bootstrap_servers
    topic = new_topic(1, KEEP)
    stamps = [BASE + 3000, BASE + 9000, BASE + 1000, BASE + 9000, BASE + 2000]
    records = [
        dataclasses.replace(r, timestamp_ms=ts)
        for r, ts in zip(make_records(5, partitions=1), stamps, strict=True)
    ]
    assert confluent.produce(b, topic, records, "gzip") == [(0, i) for i in range(5)]
    assert confluent.produce(b, topic, records[:2]) == [(0, 5), (0, 6)]
    assert confluent.list_offsets_specs(b, topic, 0) == {
        "earliest": (0, -1),
        "latest": (7, -1),
        "max_timestamp": (1, BASE + 9000),
    }
