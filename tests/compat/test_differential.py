"""Differential: each scenario against Apache Kafka, then Riverbed; no differences allowed.

:func:`~riverbed.testing.scenarios.compare.compare` normalises away what may differ between
two correct brokers (cluster/node/topic ids, ports, throttle times) and diffs the rest —
delivered offsets, records (keys, values, headers, timestamps), error names, configs.
A difference Riverbed keeps on purpose is listed in docs/broker.md ("Differences from
Apache Kafka") and dropped here by name, with the reason beside it; today there are none.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.kafka_reference import KafkaReference
from riverbed.testing.scenarios import admin, aio, confluent, kafka_python, kcat, raw
from riverbed.testing.scenarios.compare import compare
from riverbed.testing.scenarios.java import JavaClient
from riverbed.testing.scenarios.records import make_records

pytestmark = pytest.mark.kafka

BASE = 1_700_000_000_000
QUERIES = [0, BASE, BASE + 1, BASE + 5500, BASE + 9000, BASE + 9001]
_ids = itertools.count()


class Servers:
    """Kafka (A) and Riverbed (B); :meth:`diff` runs a scenario on both."""

    def __init__(self, kafka: KafkaReference, riverbed: EmbeddedBroker) -> None:
        self.kafka = kafka
        self.riverbed = riverbed

    def diff(self, scenario: Callable[[str], Any], **kwargs: Any) -> list[str]:
        return compare(
            scenario, self.kafka.bootstrap_servers, self.riverbed.bootstrap_servers, **kwargs
        )


@pytest.fixture
def servers(kafka_reference: KafkaReference, riverbed_broker: EmbeddedBroker) -> Servers:
    return Servers(kafka_reference, riverbed_broker)


def _name(label: str) -> str:
    """A name used on both servers (each scenario run creates it on its own server)."""
    return f"diff-{label}-{next(_ids)}"


def _topic(
    bootstrap: str, name: str, partitions: int = 3, configs: dict[str, str] | None = None
) -> str:
    admin.create_topic(bootstrap, name, partitions, configs)
    return name


ROUNDTRIPS: list[tuple[str, Callable[..., Any], str]] = [
    ("confluent", confluent.roundtrip, "zstd"),
    ("kafka-python", kafka_python.roundtrip, "gzip"),
    ("aiokafka", aio.roundtrip, "lz4"),
]


@pytest.mark.parametrize(
    ("label", "client", "codec"), ROUNDTRIPS, ids=[label for label, _, _ in ROUNDTRIPS]
)
def test_roundtrip_is_identical(
    servers: Servers, label: str, client: Callable[..., Any], codec: str
) -> None:
    records = make_records(24, null_headers=label != "kafka-python")
    name = _name(label)

    def scenario(bootstrap: str) -> Any:
        return client(bootstrap, _topic(bootstrap, name), codec, records)

    assert servers.diff(scenario) == []


def test_java_roundtrip_is_identical(servers: Servers, java_client: JavaClient) -> None:
    records = make_records(24)
    name = _name("java")

    def scenario(bootstrap: str) -> Any:
        return java_client.roundtrip(bootstrap, _topic(bootstrap, name), "snappy", records)

    assert servers.diff(scenario) == []


@pytest.mark.skipif(not kcat.available(), reason="kcat not installed")
def test_kcat_roundtrip_is_identical(servers: Servers) -> None:
    records = make_records(12, text_only=True, with_timestamps=False)
    name = _name("kcat")

    def scenario(bootstrap: str) -> Any:
        return kcat.roundtrip(bootstrap, _topic(bootstrap, name), "lz4", records)

    # kcat cannot set timestamps: both brokers store the producer's clock (CreateTime).
    assert servers.diff(scenario, drop_timestamps=True) == []


def test_offsets_for_times_are_identical(servers: Servers, java_client: JavaClient) -> None:
    name = _name("times")

    def scenario(bootstrap: str) -> Any:
        # kept: 2023 timestamps are past the default retention, and the next retention
        # check (Riverbed every 30 s, Kafka every 5 min) may delete them mid-test
        topic = _topic(bootstrap, name, 1, {"retention.ms": "-1"})
        confluent.produce(bootstrap, topic, make_records(10, partitions=1, base_timestamp_ms=BASE))
        return {
            "confluent": confluent.offsets_for_times(bootstrap, topic, 0, QUERIES),
            "kafka-python": kafka_python.offsets_for_times(bootstrap, topic, 0, QUERIES),
            "aiokafka": aio.offsets_for_times(bootstrap, topic, 0, QUERIES),
            "java": java_client.offsets_for_times(bootstrap, topic, 0, QUERIES),
            "specs": confluent.list_offsets_specs(bootstrap, topic, 0),
        }

    assert servers.diff(scenario) == []


def test_admin_lifecycles_are_identical(servers: Servers) -> None:
    ck, kp = _name("adm-ck"), _name("adm-kp")

    def scenario(bootstrap: str) -> Any:
        return {
            "confluent": admin.confluent_admin_lifecycle(bootstrap, ck),
            "kafka-python": admin.kafka_python_admin_lifecycle(bootstrap, kp),
        }

    assert servers.diff(scenario) == []


def test_bad_inputs_answer_the_same_errors(servers: Servers) -> None:
    name = _name("bad")

    def scenario(bootstrap: str) -> Any:
        topic = _topic(bootstrap, name, 1)
        out: dict[str, Any] = dict(raw.bad_inputs(bootstrap, topic))
        out["confluent_out_of_range"] = confluent.consume_out_of_range(bootstrap, topic, 0, 50)
        out["kafka_python_out_of_range"] = kafka_python.consume_out_of_range(
            bootstrap, topic, 0, 50
        )
        return out

    assert servers.diff(scenario) == []
