"""Every client produces keyed records with headers under every codec and reads them back
by assign/seek: identical keys, values, headers, timestamps and offsets."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from riverbed.testing.scenarios import aio, confluent, kafka_python, kcat, raw
from riverbed.testing.scenarios.java import JavaClient
from riverbed.testing.scenarios.records import (
    CODECS,
    TEXT_HEADERS,
    expected_consumed,
    make_records,
)

# Kafka runs of these roundtrips are duplicates of test_differential.py (which diffs the same
# clients' results on both brokers): gated, run them with -m kafka (tests/conftest.py).
pytestmark = pytest.mark.kafka_variant

COUNT = 30


def _check_offsets(delivered: tuple[tuple[int, int], ...], records_partitions: list[int]) -> None:
    # Each partition's offsets are 0..n-1 in production order.
    per: dict[int, list[int]] = {}
    for partition, offset in delivered:
        per.setdefault(partition, []).append(offset)
    assert [p for p, _ in delivered] == records_partitions
    assert all(offsets == list(range(len(offsets))) for offsets in per.values())


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(
    "client",
    [confluent.roundtrip, kafka_python.roundtrip, aio.roundtrip],
    ids=["confluent", "kafka-python", "aiokafka"],
)
def test_python_clients_roundtrip(
    server: Any, new_topic: Callable[..., str], client: Callable[..., Any], codec: str
) -> None:
    topic = new_topic(3)
    # kafka-python refuses null header values on send.
    records = make_records(COUNT, null_headers=client is not kafka_python.roundtrip)
    result = client(server.bootstrap_servers, topic, codec, records)
    _check_offsets(result.delivered, [r.partition for r in records])
    assert result.consumed == expected_consumed(records, result.delivered)


@pytest.mark.parametrize("codec", CODECS)
def test_java_client_roundtrip(
    server: Any, new_topic: Callable[..., str], java_client: JavaClient, codec: str
) -> None:
    topic = new_topic(3)
    records = make_records(COUNT)
    result = java_client.roundtrip(server.bootstrap_servers, topic, codec, records)
    _check_offsets(result.delivered, [r.partition for r in records])
    assert result.consumed == expected_consumed(records, result.delivered)


@pytest.mark.skipif(not kcat.available(), reason="kcat not installed")
@pytest.mark.parametrize("codec", CODECS)
def test_kcat_roundtrip(server: Any, new_topic: Callable[..., str], codec: str) -> None:
    topic = new_topic(3)
    records = make_records(COUNT, text_only=True, with_timestamps=False)
    before = int(time.time() * 1000) - 1000
    result = kcat.roundtrip(server.bootstrap_servers, topic, codec, records)
    after = int(time.time() * 1000) + 1000
    _check_offsets(result.delivered, [r.partition for r in records])
    got = {(c.partition, c.offset): c for c in result.consumed}
    assert len(got) == len(records)
    for rec, (partition, offset) in zip(records, result.delivered, strict=True):
        c = got[(partition, offset)]
        assert (c.key, c.value, c.headers) == (rec.key, rec.value, TEXT_HEADERS)
        assert before <= c.timestamp_ms <= after


@pytest.mark.parametrize("codec", CODECS)
def test_batches_keep_the_producer_codec(
    server: Any, new_topic: Callable[..., str], codec: str
) -> None:
    """A raw fetch shows batches stored with the codec the producer used (topic
    compression.type=producer): the broker neither recompresses nor decompresses."""
    topic = new_topic(1)
    records = [r for r in make_records(10, partitions=1)]
    confluent.produce(server.bootstrap_servers, topic, records, codec)
    codecs = raw.fetch_codecs(server.bootstrap_servers, topic, 0)
    assert codecs and set(codecs) == {CODECS.index(codec)}
