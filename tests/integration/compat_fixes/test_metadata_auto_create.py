"""Metadata auto-creation answered as Kafka 4.x answers it (kafka-go's ``TestConn``, issue 16).

Kafka's AutoTopicCreationManager starts creating a topic Metadata asks for and answers at
once: UNKNOWN_TOPIC_OR_PARTITION, no partitions, topic id zero (v10+), ``is_internal`` by
name -- measured on Kafka 4.4 for v1, v4, v9 and v12 (not LEADER_NOT_AVAILABLE: that was
the ZooKeeper-mode answer).  A Metadata after the creation finished answers the partitions.
An illegal name is INVALID_TOPIC_EXCEPTION and is not created; a name asked for twice is
answered once.  Same raw requests to Kafka and Riverbed; the first answer is compared field
by field (ids normalised).  The internal topics, auto-created by Riverbed's coordinators with
their own partition counts and configs, are checked on a fresh Riverbed broker.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import MetadataRequest
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.scenarios import aio, confluent, kafka_python, kcat
from riverbed.testing.scenarios.records import Record
from riverbed.testing.wire import WireClient

METADATA = 3
ZERO_UUID = uuid.UUID(int=0)
DEADLINE_S = 60.0
Wanted = MetadataRequest.MetadataRequestTopic


@pytest.fixture
def wire(server: Any) -> Iterator[WireClient]:
    client = WireClient(server.bootstrap_servers, client_id="metadata-auto-create")
    yield client
    client.close()


def _ask(wire: WireClient, version: int, names: list[str], auto: bool = True) -> Any:
    request = MetadataRequest(
        topics=[Wanted(name=n) for n in names],
        allow_auto_topic_creation=auto,
        include_topic_authorized_operations=False,
    )
    return wire.call(METADATA, version, request)


def _shape(topic: Any, version: int) -> tuple[Any, ...]:
    """What a client sees of one topic's answer; the topic id only as zero or not."""
    topic_id = getattr(topic, "topic_id", ZERO_UUID) if version >= 10 else ZERO_UUID
    return (
        topic.name,
        topic.error_code,
        topic.is_internal,
        len(topic.partitions),
        topic_id == ZERO_UUID,
        topic.topic_authorized_operations if version >= 8 else None,
    )


def _until_created(wire: WireClient, version: int, name: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        [topic] = _ask(wire, version, [name]).topics
        if topic.error_code == ErrorCode.NONE:
            return topic
        assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic
        assert time.monotonic() < deadline, f"{name} was never auto-created"
        time.sleep(0.05)


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_an_auto_created_topic_is_unknown_then_appears(wire: WireClient, version: int) -> None:
    name = f"auto-v{version}-{uuid.uuid4().hex[:8]}"
    [first] = _ask(wire, version, [name]).topics
    omitted = -(2**31) if version >= 8 else None  # topic_authorized_operations not asked
    assert _shape(first, version) == (
        name,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        False,
        0,
        True,
        omitted,
    )
    created = _until_created(wire, version, name)
    assert len(created.partitions) == 1  # num.partitions, Kafka's default on both
    assert [(p.partition_index, p.error_code) for p in created.partitions] == [(0, 0)]
    if version >= 10:
        assert created.topic_id != ZERO_UUID


def test_an_illegal_name_is_invalid_and_never_created(wire: WireClient) -> None:
    for version in (1, 12):
        [topic] = _ask(wire, version, ["bad name!"]).topics
        assert _shape(topic, version)[:5] == (
            "bad name!",
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            False,
            0,
            True,
        )
    [too_long] = _ask(wire, 12, ["x" * 250]).topics
    assert too_long.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_no_creation_when_the_request_says_no(wire: WireClient) -> None:
    name = f"no-auto-{uuid.uuid4().hex[:8]}"
    [topic] = _ask(wire, 12, [name], auto=False).topics
    assert _shape(topic, 12)[:5] == (name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, False, 0, True)
    # a later auto-creating Metadata (after any creation would have been queued) still
    # starts from nothing: the first answer is unknown again, then the topic appears
    [again] = _ask(wire, 12, [name]).topics
    assert again.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    _until_created(wire, 12, name)


def test_a_name_asked_twice_is_answered_once(wire: WireClient) -> None:
    a, b = f"pair-a-{uuid.uuid4().hex[:6]}", f"pair-b-{uuid.uuid4().hex[:6]}"
    answered = _ask(wire, 12, [a, b, a]).topics
    assert sorted(t.name for t in answered) == sorted([a, b])
    assert {t.error_code for t in answered} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


CLIENTS = {
    "confluent-kafka": confluent,
    "kafka-python": kafka_python,
    "aiokafka": aio,
    "kcat": kcat,
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_clients_produce_to_a_topic_auto_created_on_first_use(server: Any, client: str) -> None:
    """The clients retry the unknown answer: the first produce to a topic that does not
    exist lands, as against Kafka (they had relied on Riverbed's waiting answer before)."""
    if client == "kcat" and not kcat.available():
        pytest.skip("kcat not on PATH")
    topic = f"first-use-{client}-{uuid.uuid4().hex[:8]}"
    records = [Record(0, b"k%d" % i, b"v%d" % i) for i in range(3)]
    observed = CLIENTS[client].roundtrip(server.bootstrap_servers, topic, "none", records)
    assert observed.delivered == ((0, 0), (0, 1), (0, 2))
    assert [(c.offset, c.key, c.value) for c in observed.consumed] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(3)
    ]


@pytest.fixture
def fresh_riverbed(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path) as broker:
        yield broker


def test_internal_topics_are_auto_created_by_their_coordinators(
    fresh_riverbed: EmbeddedBroker,
) -> None:
    """Kafka creates ``__consumer_offsets`` / ``__transaction_state`` from Metadata with
    their coordinators' partition counts and configs; so does Riverbed (the default
    auto-creation would make 1 partition without compaction)."""
    wire = WireClient(fresh_riverbed.bootstrap_servers, client_id="metadata-internal")
    try:
        for name in ("__consumer_offsets", "__transaction_state"):
            [first] = _ask(wire, 12, [name]).topics
            assert _shape(first, 12)[:5] == (
                name,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                True,
                0,
                True,
            )
            created = _until_created(wire, 12, name)
            assert created.is_internal
            topic = fresh_riverbed.broker.topics.get(name)
            assert topic is not None
            assert topic.configs.get("cleanup.policy") == "compact", topic.configs
            assert len(created.partitions) == topic.partitions > 1
    finally:
        wire.close()
