"""CreateTopics, DeleteTopics, CreatePartitions and DescribeConfigs against in-memory fakes."""

from __future__ import annotations

import uuid
from typing import Any

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.handlers import (
    create_partitions,
    create_topics,
    delete_topics,
    describe_configs,
)
from riverbed.errors import InvalidPartitionsError, TopicDeletionDisabledError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
)

Creatable = CreateTopicsRequest.CreatableTopic


def _create(broker: FakeBroker, *topics: Creatable, validate_only: bool = False) -> Any:
    request = CreateTopicsRequest(topics=list(topics), validate_only=validate_only)
    return answer(create_topics.handle, broker, ctx(create_topics.API_KEY, 7), request)


def test_create_topics_answers_each_topic_on_its_own() -> None:
    broker = FakeBroker()
    broker.topics.add("exists")
    response = _create(
        broker,
        Creatable(
            name="new",
            num_partitions=3,
            replication_factor=1,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name="retention.ms", value="1000")],
        ),
        Creatable(name="exists", num_partitions=1, replication_factor=1),
        Creatable(
            name="manual",
            num_partitions=1,
            replication_factor=1,
            assignments=[CreateTopicsRequest.CreatableReplicaAssignment(broker_ids=[7])],
        ),
    )
    rows = [(t.name, t.error_code, t.num_partitions) for t in response.topics]
    assert rows == [
        ("new", ErrorCode.NONE, 3),
        ("exists", ErrorCode.TOPIC_ALREADY_EXISTS, -1),
        ("manual", ErrorCode.INVALID_REQUEST, -1),  # assignment and counts: -1 needed
    ]
    assert "already exists" in response.topics[1].error_message
    created = response.topics[0]
    configs = {c.name: c.value for c in created.configs}
    assert configs["retention.ms"] == "1000"
    assert created.topic_id == broker.topics.get("new").topic_id  # type: ignore[union-attr]
    assert broker.topics.get("manual") is None


def test_create_topics_accepts_an_assignment_of_this_node_alone() -> None:
    broker = FakeBroker()  # node 7
    Assign = CreateTopicsRequest.CreatableReplicaAssignment

    def manual(name: str, *lists: tuple[int, list[int]]) -> Creatable:
        return Creatable(
            name=name,
            num_partitions=-1,
            replication_factor=-1,
            assignments=[Assign(partition_index=i, broker_ids=ids) for i, ids in lists],
        )

    response = _create(
        broker,
        manual("ok", (1, [7]), (0, [7])),
        manual("other-broker", (0, [8])),
        manual("two-replicas", (0, [7, 8])),
        manual("twice", (0, [7, 7])),
        manual("empty", (0, [])),
        manual("gap", (0, [7]), (2, [7])),
    )
    rows = [(t.name, t.error_code, t.num_partitions) for t in response.topics]
    refused = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert rows == [("ok", ErrorCode.NONE, 2)] + [
        (name, refused, -1) for name in ("other-broker", "two-replicas", "twice", "empty", "gap")
    ]
    assert "broker 8" in response.topics[1].error_message
    assert broker.topics.get("ok").partitions == 2  # type: ignore[union-attr]


def test_create_topics_validate_only_creates_nothing() -> None:
    broker = FakeBroker()
    response = _create(
        broker, Creatable(name="v", num_partitions=2, replication_factor=1), validate_only=True
    )
    assert (response.topics[0].error_code, response.topics[0].num_partitions) == (ErrorCode.NONE, 2)
    assert broker.topics.get("v") is None


def _delete(broker: FakeBroker, version: int, request: DeleteTopicsRequest) -> Any:
    response = answer(delete_topics.handle, broker, ctx(delete_topics.API_KEY, version), request)
    return [(r.name, r.error_code) for r in response.responses]


def test_delete_topics_by_name_and_by_id_wakes_fetches() -> None:
    broker = FakeBroker()
    broker.topics.add("a")
    b = broker.topics.add("b")
    assert _delete(broker, 5, DeleteTopicsRequest(topic_names=["a", "zz"])) == [
        ("a", ErrorCode.NONE),
        ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    by_id = DeleteTopicsRequest(
        topics=[
            DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=b.topic_id),
            DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=uuid.uuid4()),
        ]
    )
    assert _delete(broker, 6, by_id) == [
        ("b", ErrorCode.NONE),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    assert broker.topics.deleted == ["a", "b"]
    assert broker.purgatory.notified_all == 2


def test_deletion_disabled_is_invalid_request_before_v3() -> None:
    broker = FakeBroker()
    broker.topics.add("t")
    broker.topics.errors["t"] = TopicDeletionDisabledError("delete.topic.enable is false")
    request = DeleteTopicsRequest(topic_names=["t"])
    assert _delete(broker, 2, request) == [("t", ErrorCode.INVALID_REQUEST)]
    assert _delete(broker, 3, request) == [("t", ErrorCode.TOPIC_DELETION_DISABLED)]


def test_create_partitions_errors_and_growth() -> None:
    broker = FakeBroker()
    broker.topics.add("t")
    broker.topics.add("small")
    broker.topics.errors["small"] = InvalidPartitionsError("cannot shrink")
    Topic = CreatePartitionsRequest.CreatePartitionsTopic
    Assignment = CreatePartitionsRequest.CreatePartitionsAssignment
    request = CreatePartitionsRequest(
        topics=[
            Topic(name="t", count=4),
            Topic(name="small", count=0),
            Topic(name="t", count=9, assignments=[Assignment(broker_ids=[7])]),
            Topic(name="t", count=5, assignments=[Assignment(broker_ids=[8])]),
            Topic(name="t", count=6, assignments=[Assignment(broker_ids=[7])] * 2),
        ]
    )
    response = answer(create_partitions.handle, broker, ctx(create_partitions.API_KEY, 1), request)
    assert [(r.name, r.error_code) for r in response.results] == [
        ("t", ErrorCode.NONE),
        ("small", ErrorCode.INVALID_PARTITIONS),
        ("t", ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # 5 new partitions, 1 assignment
        ("t", ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # no broker 8
        ("t", ErrorCode.NONE),  # this node (7) for both new partitions
    ]
    assert "5 additional partition(s)" in response.results[2].error_message
    assert broker.topics.get("t").partitions == 6  # type: ignore[union-attr]


def test_describe_configs_topic_broker_and_unknown() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1, **{"retention.ms": "5"})
    Res = DescribeConfigsRequest.DescribeConfigsResource
    request = DescribeConfigsRequest(
        resources=[
            Res(
                resource_type=describe_configs.TOPIC,
                resource_name="t",
                configuration_keys=["retention.ms"],
            ),
            Res(
                resource_type=describe_configs.TOPIC, resource_name="nope", configuration_keys=None
            ),
            Res(
                resource_type=describe_configs.BROKER,
                resource_name="7",
                configuration_keys=["node.id"],
            ),
            Res(resource_type=describe_configs.BROKER, resource_name="8", configuration_keys=None),
        ],
        include_synonyms=False,
    )
    response = answer(describe_configs.handle, broker, ctx(describe_configs.API_KEY, 1), request)
    rows = [
        (r.resource_name, r.error_code, [(c.name, c.value) for c in r.configs])
        for r in response.results
    ]
    assert rows == [
        ("t", ErrorCode.NONE, [("retention.ms", "5")]),
        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
        ("7", ErrorCode.NONE, [("node.id", "7")]),
        ("8", ErrorCode.INVALID_REQUEST, []),
    ]
