"""Topic policies, checked with real clients: internal topics are protected (issue 15.4),
the partition count per broker is capped (15.5), and each refusal says what is wrong.

Error codes (see docs/broker.md, "Topic policies"): deleting an internal topic or
changing its partition count is POLICY_VIOLATION (Kafka allows both; both break every
consumer group), DeleteRecords on one is INVALID_TOPIC_EXCEPTION (as Kafka);
``delete.topic.enable=false`` is TOPIC_DELETION_DISABLED (as Kafka).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from riverbed.coordinator import OFFSETS_TOPIC_NAME
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreateTopicsRequest, DeleteTopicsRequest, MetadataRequest
from riverbed.testing.embedded import EmbeddedBroker

TIMEOUT_S = 30.0
METADATA, DELETE_TOPICS = 3, 20


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("limits")) as embedded:
        embedded.call(lambda b: b.groups.ensure_topic())  # created on first use
        yield embedded


@pytest.fixture
def admin(broker: EmbeddedBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _error(future: Any) -> tuple[int, str]:
    """(code, message) of a failed admin future; (0, '') if it succeeded."""
    try:
        future.result(TIMEOUT_S)
    except KafkaException as exc:
        err: KafkaError = exc.args[0]
        return err.code(), err.str()
    return 0, ""


def _delete_v6(wire: Any, name: str) -> Any:
    """DeleteTopics v6 over the wire (librdkafka's version carries no error message)."""
    request = DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name=name)], timeout_ms=5000
    )
    return wire.call(DELETE_TOPICS, 6, request).responses[0]


def test_internal_topic_cannot_be_deleted(
    broker: EmbeddedBroker, admin: AdminClient, connect: Any
) -> None:
    code, _message = _error(admin.delete_topics([OFFSETS_TOPIC_NAME])[OFFSETS_TOPIC_NAME])
    assert code == KafkaError.POLICY_VIOLATION
    result = _delete_v6(connect(broker.bootstrap_servers), OFFSETS_TOPIC_NAME)
    assert result.error_code == ErrorCode.POLICY_VIOLATION
    assert "internal" in result.error_message
    assert broker.broker.topics.get(OFFSETS_TOPIC_NAME) is not None


def test_internal_topic_keeps_its_partition_count(admin: AdminClient) -> None:
    futures = admin.create_partitions([NewPartitions(OFFSETS_TOPIC_NAME, 60)])
    code, message = _error(futures[OFFSETS_TOPIC_NAME])
    assert code == KafkaError.POLICY_VIOLATION
    assert "internal" in message


def test_records_of_internal_topic_cannot_be_deleted(admin: AdminClient) -> None:
    futures = admin.delete_records([TopicPartition(OFFSETS_TOPIC_NAME, 0, -1)])
    code, _message = _error(next(iter(futures.values())))
    assert code == KafkaError.TOPIC_EXCEPTION  # INVALID_TOPIC_EXCEPTION, as Kafka


def test_metadata_lists_only_kafka_internal_topics_as_internal(
    broker: EmbeddedBroker, admin: AdminClient, connect: Any
) -> None:
    admin.create_topics([NewTopic("__not_internal", 1)])["__not_internal"].result(TIMEOUT_S)
    wire = connect(broker.bootstrap_servers)
    response = wire.call(METADATA, 12, MetadataRequest(topics=None))
    internal = {t.name: t.is_internal for t in response.topics}
    assert internal[OFFSETS_TOPIC_NAME] is True
    assert internal["__not_internal"] is False


def test_deletion_disabled_says_so(tmp_path: Path, connect: Any) -> None:
    with EmbeddedBroker(tmp_path, {"delete.topic.enable": "false"}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("kept", 1)])["kept"].result(TIMEOUT_S)
        code, _message = _error(admin.delete_topics(["kept"])["kept"])
        assert code == KafkaError.TOPIC_DELETION_DISABLED
        result = _delete_v6(connect(broker.bootstrap_servers), "kept")
        assert result.error_code == ErrorCode.TOPIC_DELETION_DISABLED
        assert "delete.topic.enable=false" in result.error_message
        old = DeleteTopicsRequest(topic_names=["kept"], timeout_ms=5000)
        answer = connect(broker.bootstrap_servers).call(DELETE_TOPICS, 2, old)
        assert answer.responses[0].error_code == ErrorCode.INVALID_REQUEST  # no code 73 < v3
        assert broker.broker.topics.get("kept") is not None


CREATE_TOPICS = 19


def _create_wire(wire: Any, name: str, partitions: int, replication_factor: int = 1) -> Any:
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=replication_factor
            )
        ],
        timeout_ms=5000,
    )
    return wire.call(CREATE_TOPICS, 7, request).topics[0]


@pytest.mark.parametrize(
    ("partitions", "replication_factor", "code", "says"),
    [
        (100_000, 1, ErrorCode.POLICY_VIOLATION, "over its limit of 10000 (max.broker.partitions)"),
        (0, 1, ErrorCode.INVALID_PARTITIONS, "must be at least 1"),
        (-7, 1, ErrorCode.INVALID_PARTITIONS, "got -7"),
        (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR, "must be at least 1"),
        (1, -5, ErrorCode.INVALID_REPLICATION_FACTOR, "got -5"),
        (1, 3, ErrorCode.INVALID_REPLICATION_FACTOR, "larger than the 1 available broker"),
    ],
)
def test_create_refusals_say_what_is_wrong(
    broker: EmbeddedBroker,
    connect: Any,
    partitions: int,
    replication_factor: int,
    code: ErrorCode,
    says: str,
) -> None:
    name = f"bad-{partitions}-{replication_factor}".replace("-", "_")
    result = _create_wire(connect(broker.bootstrap_servers), name, partitions, replication_factor)
    assert result.error_code == code
    assert says in result.error_message
    assert broker.broker.topics.get(name) is None


def test_partition_cap_covers_create_grow_and_auto_create(tmp_path: Path, connect: Any) -> None:
    config = {"max.broker.partitions": "60", "num.partitions": "5"}  # 50 for __consumer_offsets
    with EmbeddedBroker(tmp_path, config) as broker:
        broker.call(lambda b: b.groups.ensure_topic())  # created on first use
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("fits", 6)])["fits"].result(TIMEOUT_S)  # 56 hosted
        code, message = _error(admin.create_topics([NewTopic("over", 5)])["over"])
        assert code == KafkaError.POLICY_VIOLATION
        assert "over its limit of 60" in message
        code, message = _error(admin.create_partitions([NewPartitions("fits", 11)])["fits"])
        assert code == KafkaError.POLICY_VIOLATION
        assert "over its limit of 60" in message
        wire = connect(broker.bootstrap_servers)
        answer = wire.call(
            METADATA,
            12,
            MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
                allow_auto_topic_creation=True,
            ),
        )
        # as Kafka: the refused auto-creation is logged, Metadata answers the topic unknown
        assert answer.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        admin.create_partitions([NewPartitions("fits", 10)])["fits"].result(TIMEOUT_S)  # 60
        assert broker.broker.topics.get("fits").partitions == 10  # type: ignore[union-attr]
        assert {"over", "auto"}.isdisjoint(t.name for t in broker.broker.topics.topics())
