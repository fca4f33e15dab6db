"""ACLs of the share group offsets admin (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets) over the raw wire, as ``User:alice`` through SASL/PLAIN, against a
broker with StandardAuthorizer and ``allow.everyone.if.no.acl.found=false``: Riverbed (an
embedded broker, default suite) and Kafka 4.4 (``-m kafka``, a second JVM: gated).

Alice may READ (hence DESCRIBE) topic ``t1`` but not ``t2``; she has READ and DESCRIBE on
group ``g`` (no DELETE), READ and DELETE on group ``g2``, nothing on ``g3``.  The admin (a
super user) first sets start offsets of ``g`` and ``g2`` on both topics.  The answers,
their errors and their order must be Kafka's (:data:`EXPECTED`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from share_helpers import alter_offsets_request, describe_offsets_request

from riverbed.protocol.messages.generated.delete_share_group_offsets_request import (
    DeleteShareGroupOffsetsRequest as Delete,
)
from riverbed.protocol.messages.generated.find_coordinator_request import (
    FindCoordinatorRequest,
)
from riverbed.protocol.messages.generated.sasl_authenticate_request import (
    SaslAuthenticateRequest,
)
from riverbed.protocol.messages.generated.sasl_handshake_request import SaslHandshakeRequest
from riverbed.testing.kafka_share_reference import SHARE_KAFKA_VERSION, share_server_properties
from riverbed.testing.sasl_acl import acl_kafka as acl_kafka_broker
from riverbed.testing.sasl_acl import acl_riverbed as acl_riverbed_broker
from riverbed.testing.sasl_acl import client_conf
from riverbed.testing.wire import WireClient

DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def acl_kafka() -> Iterator[str]:
    with acl_kafka_broker(
        share_server_properties(),
        version=SHARE_KAFKA_VERSION,
        heap="768m",
        startup_timeout_s=180.0,
    ) as bootstrap:
        yield bootstrap


@pytest.fixture(scope="module")
def acl_riverbed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    extra = {
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
    }
    with acl_riverbed_broker(tmp_path_factory.mktemp("share-acl"), extra) as bootstrap:
        yield bootstrap


@pytest.fixture(
    params=[
        pytest.param("acl_kafka", marks=[pytest.mark.kafka, pytest.mark.kafka_variant], id="kafka"),
        pytest.param("acl_riverbed", id="riverbed"),
    ]
)
def sasl_bootstrap(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(request.param))


class _SaslWire(WireClient):
    """A wire client authenticated as ``user`` with SASL/PLAIN."""

    def __init__(self, bootstrap: str, user: str) -> None:
        super().__init__(bootstrap, 30.0, client_id="share-acl-test")
        assert self.call(17, 1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        token = b"\0" + user.encode() + b"\0" + f"{user}-pw".encode()
        assert self.call(36, 2, SaslAuthenticateRequest(auth_bytes=token)).error_code == 0


def _alice(rtype: Any, name: str, op: Any) -> Any:
    return AclBinding(
        rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW
    )


def _describe(wire: WireClient, group: str, topics: dict[str, list[int]] | None) -> Any:
    [g] = wire.call(90, 1, describe_offsets_request(group, topics)).groups
    shown = [
        (t.topic_name, [(p.partition_index, p.error_code, p.start_offset) for p in t.partitions])
        for t in g.topics
    ]
    return (g.error_code, shown)


def _alter(wire: WireClient, group: str, topics: list[str]) -> Any:
    a = wire.call(91, 0, alter_offsets_request(group, {t: {0: 1} for t in topics}))
    return (
        a.error_code,
        [(t.topic_name, [p.error_code for p in t.partitions]) for t in a.responses],
    )


def _delete(wire: WireClient, group: str, topics: list[str]) -> Any:
    req = Delete(
        group_id=group,
        topics=[Delete.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics],
    )
    d = wire.call(92, 0, req)
    return (d.error_code, [(t.topic_name, t.error_code) for t in d.responses])


def _until_coordinator(wire: WireClient, group: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        req = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        [found] = wire.call(10, 4, req).coordinators
        if found.error_code == 0:
            return
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def _observe(bs: str) -> dict[str, Any]:
    admin = AdminClient(client_conf(bs, "admin"))
    for future in admin.create_topics([NewTopic("t1", 1, 1), NewTopic("t2", 1, 1)]).values():
        future.result(DEADLINE_S)
    producer = Producer(client_conf(bs, "admin"))
    for topic in ("t1", "t2"):
        for i in range(3):
            producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(DEADLINE_S) == 0
    grants = [
        _alice(ResourceType.TOPIC, "t1", AclOperation.READ),
        _alice(ResourceType.GROUP, "g", AclOperation.READ),
        _alice(ResourceType.GROUP, "g", AclOperation.DESCRIBE),
        _alice(ResourceType.GROUP, "g2", AclOperation.READ),
        _alice(ResourceType.GROUP, "g2", AclOperation.DELETE),
    ]
    for future in admin.create_acls(grants).values():
        future.result(DEADLINE_S)
    su = _SaslWire(bs, "admin")
    alice = _SaslWire(bs, "alice")
    seen: dict[str, Any] = {}
    try:
        for group in ("g", "g2", "g3"):
            _until_coordinator(su, group)
        assert _alter(su, "g", ["t1", "t2"]) == (0, [("t1", [0]), ("t2", [0])])
        assert _alter(su, "g2", ["t1", "t2"]) == (0, [("t1", [0]), ("t2", [0])])
        # ACLs reach Kafka's authorizer through the metadata log: wait until they apply.
        deadline = time.monotonic() + DEADLINE_S
        while _describe(alice, "g", {"t1": [0]}) != (0, [("t1", [(0, 0, 1)])]):
            assert time.monotonic() < deadline, _describe(alice, "g", {"t1": [0]})
            time.sleep(0.3)
        seen["describe all"] = _describe(alice, "g", None)
        seen["describe named"] = _describe(alice, "g", {"t2": [0], "t1": [0], "t9": [0]})
        seen["describe no group grant"] = _describe(alice, "g3", None)
        seen["describe READ-only group"] = _describe(alice, "g2", None)
        seen["alter"] = _alter(alice, "g", ["t2", "t1", "t9"])
        seen["alter no group grant"] = _alter(alice, "g3", ["t1"])
        seen["delete without DELETE"] = _delete(alice, "g", ["t1"])
        seen["delete"] = _delete(alice, "g2", ["t2", "t1", "t9"])
        seen["delete no group grant"] = _delete(alice, "g3", ["t1"])
    finally:
        su.close()
        alice.close()
    return seen


# Kafka 4.4's answers: ``(error, [(topic, ...)])``; 29 TOPIC_AUTHORIZATION_FAILED,
# 30 GROUP_AUTHORIZATION_FAILED.  An unknown topic the principal may not see (t9) is
# answered as a denied one.
EXPECTED: dict[str, Any] = {
    "describe all": (0, [("t1", [(0, 0, 1)])]),  # t2 left out
    "describe named": (0, [("t1", [(0, 0, 1)]), ("t2", [(0, 29, -1)]), ("t9", [(0, 29, -1)])]),
    "describe no group grant": (30, []),
    "describe READ-only group": (0, [("t1", [(0, 0, 1)])]),  # READ implies DESCRIBE
    "alter": (0, [("t2", [29]), ("t9", [29]), ("t1", [0])]),
    "alter no group grant": (30, []),
    "delete without DELETE": (30, []),
    "delete": (0, [("t2", 29), ("t9", 29), ("t1", 0)]),
    "delete no group grant": (30, []),
}


def test_share_offsets_admin_acls(sasl_bootstrap: str) -> None:
    """~5 s on Riverbed; the Kafka run starts its own JVM (~40 s)."""
    assert _observe(sasl_bootstrap) == EXPECTED
