"""Alter/ListPartitionReassignments on one node, against in-memory fakes: nothing to move,
so a reassignment to ``[this node]`` is a no-op and none is ever in progress."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers import HANDLERS, authorization, partition_reassignments
from riverbed.broker.security.acl_store import AclStore
from riverbed.broker.security.authorizer import Authorizer
from riverbed.protocol.api import API_BY_KEY
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)

Topic = AlterPartitionReassignmentsRequest.ReassignableTopic
Part = AlterPartitionReassignmentsRequest.ReassignablePartition
Listed = ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics


def _alter(broker: FakeBroker, *topics: Topic, version: int = 1, allow_rf: bool = True) -> Any:
    request = AlterPartitionReassignmentsRequest(
        timeout_ms=1, allow_replication_factor_change=allow_rf, topics=list(topics)
    )
    handler = partition_reassignments.handle_alter
    return answer(handler, broker, ctx(partition_reassignments.ALTER_KEY, version), request)


def _codes(response: Any) -> list[tuple[str, int, int, str | None]]:
    return [
        (t.name, p.partition_index, p.error_code, p.error_message)
        for t in response.responses
        for p in t.partitions
    ]


def test_both_apis_are_served_and_advertised_at_every_schema_version() -> None:
    for key in (45, 46):
        assert key in HANDLERS
        spec = API_BY_KEY[key]
        assert (spec.min_version, spec.max_version) == (0, spec.codec_max_version)


def test_reassigning_to_this_node_is_a_no_op_and_the_rest_is_refused_per_partition() -> None:
    broker = FakeBroker()  # node 7
    broker.topics.add("t", partitions=2)
    response = _alter(
        broker,
        Topic(
            name="t",
            partitions=[
                Part(partition_index=0, replicas=[7]),
                Part(partition_index=1, replicas=[7, 8]),
                Part(partition_index=1, replicas=[]),
                Part(partition_index=0, replicas=[7, 7]),
                Part(partition_index=1, replicas=None),
                Part(partition_index=2, replicas=[7]),
            ],
        ),
        Topic(name="missing", partitions=[Part(partition_index=0, replicas=[7])]),
        allow_rf=False,
    )
    assert (response.error_code, response.error_message) == (ErrorCode.NONE, None)
    assert response.allow_replication_factor_change is False  # echoed
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert _codes(response) == [
        ("t", 0, ErrorCode.NONE, None),
        (
            "t",
            1,
            invalid,
            "The manual partition assignment includes broker 8, but no such broker is registered.",
        ),
        ("t", 1, invalid, "The manual partition assignment includes an empty replica list."),
        ("t", 0, invalid, "The manual partition assignment includes the broker 7 more than once."),
        (
            "t",
            1,
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            "No partition reassignment is in progress.",
        ),
        ("t", 2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:2."),
        (
            "missing",
            0,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "Unable to find a topic named missing.",
        ),
    ]
    for version in (0, 1):  # the answer encodes at both versions
        response.encode(version)


def test_list_answers_no_reassignment_for_all_or_named_partitions() -> None:
    broker = FakeBroker()
    broker.topics.add("t", partitions=3)
    for topics in (None, [Listed(name="t", partition_indexes=[0, 2]), Listed(name="nope")]):
        request = ListPartitionReassignmentsRequest(timeout_ms=1, topics=topics)
        response = answer(
            partition_reassignments.handle_list,
            broker,
            ctx(partition_reassignments.LIST_KEY, 0),
            request,
        )
        assert (response.error_code, response.error_message, response.topics) == (
            ErrorCode.NONE,
            None,
            [],
        )


@dataclass
class _AclDeps:
    acl_store: AclStore
    authorizer: Authorizer
    topics: Any = None
    config: Any = None


def test_both_need_the_cluster_resource_under_acls(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    deps = _AclDeps(store, Authorizer(store, super_users=["User:admin"]))
    routes = authorization.authorize_routes(
        deps, {45: lambda c, r: "altered", 46: lambda c, r: "listed"}
    )

    def context(key: int, principal: str) -> RequestContext:
        return RequestContext(RequestHeader(key, 0, 1, "unit"), "10.0.0.1", principal)

    alter = AlterPartitionReassignmentsRequest(
        topics=[Topic(name="t", partitions=[Part(partition_index=0, replicas=[7])])]
    )
    assert routes[45](context(45, "User:admin"), alter) == "altered"
    denied = routes[45](context(45, "User:alice"), alter)
    assert denied.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert _codes(denied) == [("t", 0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)]
    listing = ListPartitionReassignmentsRequest(topics=None)
    assert routes[46](context(46, "User:admin"), listing) == "listed"
    refused = routes[46](context(46, "User:alice"), listing)
    assert (refused.error_code, refused.topics) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
