"""Metadata, DescribeCluster, FindCoordinator and ApiVersions against in-memory fakes."""

from __future__ import annotations

import uuid
from typing import Any

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.handlers import api_versions, describe_cluster, find_coordinator, metadata
from riverbed.protocol.api import API_BY_KEY
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    FindCoordinatorRequest,
    MetadataRequest,
)

Wanted = MetadataRequest.MetadataRequestTopic


def _metadata(broker: FakeBroker, version: int, request: MetadataRequest) -> Any:
    return answer(metadata.handle, broker, ctx(metadata.API_KEY, version), request)


def _topics(response: Any) -> list[tuple[Any, ...]]:
    return [(t.name, t.error_code, len(t.partitions), t.is_internal) for t in response.topics]


def test_null_topics_lists_every_topic_on_this_node() -> None:
    broker = FakeBroker()
    broker.topics.add("a", 2)
    broker.topics.add("__consumer_offsets", 3)
    response = _metadata(broker, 9, MetadataRequest(topics=None))
    assert _topics(response) == [
        ("a", ErrorCode.NONE, 2, False),
        ("__consumer_offsets", ErrorCode.NONE, 3, True),
    ]
    [node] = response.brokers
    assert (node.node_id, node.host, node.port) == (7, "broker.example", 19092)
    assert (response.cluster_id, response.controller_id) == ("cluster-under-test", 7)
    leaders = {
        (p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
        for p in response.topics[0].partitions
    }
    assert leaders == {(7, (7,), (7,))}


def test_unknown_and_illegal_names_without_auto_creation() -> None:
    broker = FakeBroker()
    request = MetadataRequest(topics=[Wanted(name="missing"), Wanted(name="bad/name")])
    assert _topics(_metadata(broker, 9, request)) == [
        ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, False),
        ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION, 0, False),
    ]


def test_auto_creation_starts_and_answers_unknown_as_kafka_does() -> None:
    broker = FakeBroker()
    broker.topics.auto_create = True
    request = MetadataRequest(topics=[Wanted(name="new")], allow_auto_topic_creation=True)
    # Kafka 4.4 answers a topic it starts creating UNKNOWN_TOPIC_OR_PARTITION, no partitions
    assert _topics(_metadata(broker, 9, request)) == [
        ("new", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, False)
    ]
    assert broker.topics.auto_created == [("new", None)]
    broker.topics.finish_auto_creations()
    assert _topics(_metadata(broker, 9, request)) == [("new", ErrorCode.NONE, 1, False)]


def test_no_auto_creation_when_the_request_says_no() -> None:
    broker = FakeBroker()
    broker.topics.auto_create = True
    request = MetadataRequest(topics=[Wanted(name="new")], allow_auto_topic_creation=False)
    assert _topics(_metadata(broker, 9, request))[0][1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.topics.auto_created == []
    # v0-3 have no flag: they always may create
    assert _topics(_metadata(broker, 3, request))[0][1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.topics.auto_created == [("new", None)]


def test_an_illegal_name_is_not_auto_created() -> None:
    broker = FakeBroker()
    broker.topics.auto_create = True
    request = MetadataRequest(topics=[Wanted(name="bad name!")], allow_auto_topic_creation=True)
    assert _topics(_metadata(broker, 12, request)) == [
        ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION, 0, False)
    ]
    assert broker.topics.auto_created == []


def test_internal_topics_are_auto_created_by_their_coordinators() -> None:
    broker = FakeBroker()
    broker.topics.auto_create = True
    names = ["__consumer_offsets", "__transaction_state", "__share_group_state"]
    request = MetadataRequest(topics=[Wanted(name=n) for n in names])
    assert _topics(_metadata(broker, 12, request)) == [
        (n, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, True) for n in names
    ]
    assert [(n, create is not None) for n, create in broker.topics.auto_created] == [
        (n, True) for n in names
    ]


def test_a_name_asked_twice_is_answered_once() -> None:
    broker = FakeBroker()
    broker.topics.add("t")
    request = MetadataRequest(topics=[Wanted(name="t"), Wanted(name="u"), Wanted(name="t")])
    assert [t.name for t in _metadata(broker, 9, request).topics] == ["t", "u"]


def test_lookup_by_id_from_v12_and_null_names_before() -> None:
    broker = FakeBroker()
    topic = broker.topics.add("t")
    by_id = MetadataRequest(
        topics=[
            Wanted(name=None, topic_id=topic.topic_id),
            Wanted(name=None, topic_id=uuid.uuid4()),
        ]
    )
    assert _topics(_metadata(broker, 12, by_id)) == [
        ("t", ErrorCode.NONE, 1, False),
        (None, ErrorCode.UNKNOWN_TOPIC_ID, 0, False),
    ]
    assert _topics(_metadata(broker, 10, by_id))[0][1] == ErrorCode.INVALID_REQUEST


def test_describe_cluster_is_this_node() -> None:
    response = answer(
        describe_cluster.handle,
        FakeBroker(),
        ctx(describe_cluster.API_KEY, 0),
        DescribeClusterRequest(),
    )
    [node] = response.brokers
    assert (response.cluster_id, response.controller_id) == ("cluster-under-test", 7)
    assert (node.broker_id, node.host, node.port) == (7, "broker.example", 19092)


def test_find_coordinator_answers_groups_only() -> None:
    broker = FakeBroker()
    single = answer(
        find_coordinator.handle,
        broker,
        ctx(find_coordinator.API_KEY, 3),
        FindCoordinatorRequest(key="g", key_type=0),
    )
    assert (single.error_code, single.node_id, single.host, single.port) == (
        ErrorCode.NONE,
        7,
        "broker.example",
        19092,
    )
    batched = answer(
        find_coordinator.handle,
        broker,
        ctx(find_coordinator.API_KEY, 4),
        FindCoordinatorRequest(key_type=2, coordinator_keys=["s1", "s2"]),
    )
    assert [(c.key, c.error_code, c.node_id) for c in batched.coordinators] == [
        ("s1", ErrorCode.COORDINATOR_NOT_AVAILABLE, -1),
        ("s2", ErrorCode.COORDINATOR_NOT_AVAILABLE, -1),
    ]


def test_api_versions_lists_the_served_keys_the_codec_knows() -> None:
    broker = FakeBroker(api_keys=[0, 18, 32_000])  # 32000: served but not in the codec
    response = answer(
        api_versions.handle, broker, ctx(api_versions.API_KEY, 3), ApiVersionsRequest()
    )
    assert response.error_code == ErrorCode.NONE
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (k, API_BY_KEY[k].min_version, API_BY_KEY[k].max_version) for k in (0, 18)
    ]


def test_unsupported_api_versions_version_falls_back_to_v0() -> None:
    broker = FakeBroker()
    header = RequestHeader(api_versions.API_KEY, 99, 5, "c")
    fallback = api_versions.unsupported_version_response(broker, header)
    assert fallback is not None
    v0, response = fallback
    assert (v0.api_version, v0.correlation_id) == (0, 5)
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION and response.api_keys
    other = RequestHeader(metadata.API_KEY, 99, 5, "c")
    assert api_versions.unsupported_version_response(broker, other) is None
