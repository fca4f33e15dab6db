"""Authorized operations (KIP-430) as confluent-kafka's AdminClient asks for them, on Apache
Kafka and Riverbed (issue 16; librdkafka's test 0081 found them missing).

Without an authorizer Kafka answers every operation it supports on the resource type;
with StandardAuthorizer, those the principal is allowed.  The same client calls run against
both brokers and must observe the same sets (``-m "not kafka"`` runs Riverbed alone).
DescribeCluster, Metadata (describe_topics) and, for groups, ConsumerGroupDescribe with its
fallback to DescribeGroups (a classic or unknown group) are exercised.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicCollection
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from riverbed.protocol.messages import MetadataRequest
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.sasl_acl import acl_kafka as acl_kafka_broker
from riverbed.testing.sasl_acl import acl_riverbed as acl_riverbed_broker
from riverbed.testing.sasl_acl import client_conf
from riverbed.testing.wire import WireClient

DEADLINE_S = 60.0
CLUSTER_OPS = {
    "ALTER",
    "ALTER_CONFIGS",
    "CLUSTER_ACTION",
    "CREATE",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "IDEMPOTENT_WRITE",
}
TOPIC_OPS = {
    "ALTER",
    "ALTER_CONFIGS",
    "CREATE",
    "DELETE",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "READ",
    "WRITE",
}
GROUP_OPS = {"ALTER_CONFIGS", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "READ"}


def _names(ops: Any) -> set[str] | None:
    return None if ops is None else {op.name for op in ops}


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _observe(admin: AdminClient, topic: str, groups: list[str]) -> dict[str, Any]:
    cluster = admin.describe_cluster(include_authorized_operations=True).result(DEADLINE_S)
    plain = admin.describe_cluster().result(DEADLINE_S)
    [described] = admin.describe_topics(
        TopicCollection([topic]), include_authorized_operations=True
    ).values()
    observed: dict[str, Any] = {
        "cluster": _names(cluster.authorized_operations),
        "cluster (not asked)": _names(plain.authorized_operations),
        "topic": _names(described.result(DEADLINE_S).authorized_operations),
    }
    futures = admin.describe_consumer_groups(groups, include_authorized_operations=True)
    for group, future in futures.items():
        observed[group] = _names(future.result(DEADLINE_S).authorized_operations)
    return observed


def _joined(bootstrap: str, topic: str, group: str, protocol: str, **conf: Any) -> Consumer:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol, **conf}
    )
    consumer.subscribe([topic])
    _until(lambda: bool(consumer.poll(0.2) or consumer.assignment()), f"{group} assignment")
    return consumer


def test_without_an_authorizer_every_supported_operation(server: Any) -> None:
    bootstrap = server.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topic = f"ops-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(DEADLINE_S)
    classic = _joined(bootstrap, topic, f"classic-{suffix}", "classic")
    modern = _joined(bootstrap, topic, f"consumer-{suffix}", "consumer")
    try:
        observed = _observe(
            admin, topic, [f"classic-{suffix}", f"consumer-{suffix}", f"unknown-{suffix}"]
        )
    finally:
        classic.close()
        modern.close()
    assert observed == {
        "cluster": CLUSTER_OPS,
        "cluster (not asked)": None,
        "topic": TOPIC_OPS,
        f"classic-{suffix}": GROUP_OPS,
        f"consumer-{suffix}": GROUP_OPS,
        f"unknown-{suffix}": GROUP_OPS,  # Dead, no error: described all the same
    }


def test_metadata_v10_cluster_operations_when_asked(fixes_riverbed: EmbeddedBroker) -> None:
    """Metadata v8-10 carry the cluster's operations too (librdkafka asks with v12+)."""
    with WireClient(fixes_riverbed.bootstrap_servers, client_id="ops") as wire:
        for asked, expected in ((True, 0b1111110100000), (False, -(2**31))):
            request = MetadataRequest(
                topics=[],
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=asked,
                include_topic_authorized_operations=asked,
            )
            response = wire.call(3, 10, request)
            assert response.cluster_authorized_operations == expected


# -- with an authorizer -------------------------------------------------------------------
class _AclServer:
    """A broker with StandardAuthorizer, ``User:admin`` super, ``User:alice`` not, reached
    through SASL/PLAIN at ``sasl_bootstrap``."""

    def __init__(self, sasl_bootstrap: str) -> None:
        self.sasl_bootstrap = sasl_bootstrap

    def conf(self, user: str) -> dict[str, Any]:
        return client_conf(self.sasl_bootstrap, user)


@pytest.fixture(scope="module")
def acl_kafka() -> Iterator[_AclServer]:
    with acl_kafka_broker() as bootstrap:
        yield _AclServer(bootstrap)


@pytest.fixture(scope="module")
def acl_riverbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_AclServer]:
    with acl_riverbed_broker(tmp_path_factory.mktemp("acl-ops")) as bootstrap:
        yield _AclServer(bootstrap)


@pytest.fixture(
    params=[
        pytest.param("acl_kafka", marks=pytest.mark.kafka, id="kafka"),
        pytest.param("acl_riverbed", id="riverbed"),
    ]
)
def acl_server(request: pytest.FixtureRequest) -> _AclServer:
    server: _AclServer = request.getfixturevalue(request.param)
    return server


def _alice(rtype: Any, name: str, op: Any, permission: Any = AclPermissionType.ALLOW) -> Any:
    return AclBinding(rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, permission)


# Its Kafka run starts a second JVM (StandardAuthorizer, SASL): gated (tests/conftest.py);
# the run without an authorizer above stays the default suite's Kafka differential here.
@pytest.mark.kafka_variant
def test_with_an_authorizer_the_principals_operations(acl_server: _AclServer) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, hidden, group = f"acl-ops-{suffix}", f"acl-hidden-{suffix}", f"acl-group-{suffix}"
    admin = AdminClient(acl_server.conf("admin"))
    for future in admin.create_topics([NewTopic(topic, 1, 1), NewTopic(hidden, 1, 1)]).values():
        future.result(DEADLINE_S)
    grants = [
        _alice(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
        _alice(ResourceType.TOPIC, topic, AclOperation.READ),  # implies DESCRIBE
        _alice(ResourceType.GROUP, group, AclOperation.ALL),
        _alice(ResourceType.GROUP, group, AclOperation.DELETE, AclPermissionType.DENY),
    ]
    for future in admin.create_acls(grants).values():
        future.result(DEADLINE_S)
    alice = AdminClient(acl_server.conf("alice"))
    # ACLs reach Kafka's authorizer through the metadata log: wait until they apply.
    _until(lambda: _describes(alice, topic), "alice's grants to apply")
    member = _joined(acl_server.sasl_bootstrap, topic, group, "classic", **acl_server.conf("alice"))
    try:
        observed = _observe(alice, topic, [group])
    finally:
        member.close()
    assert observed == {
        "cluster": {"DESCRIBE"},
        "cluster (not asked)": None,
        "topic": {"READ", "DESCRIBE"},
        group: {"READ", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"},
    }
    [denied] = alice.describe_topics(
        TopicCollection([hidden]), include_authorized_operations=True
    ).values()
    with pytest.raises(KafkaException) as caught:
        denied.result(DEADLINE_S)
    assert caught.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    assert _observe(admin, topic, [group]) == {
        "cluster": CLUSTER_OPS,
        "cluster (not asked)": None,
        "topic": TOPIC_OPS,
        group: GROUP_OPS,
    }


def _describes(admin: AdminClient, topic: str) -> bool:
    [future] = admin.describe_topics(TopicCollection([topic])).values()
    try:
        future.result(DEADLINE_S)
    except KafkaException:
        return False
    return True
