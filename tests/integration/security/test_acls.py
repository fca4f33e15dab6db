"""ACLs with confluent-kafka (librdkafka 2.x) against a broker with Kafka's
StandardAuthorizer settings and ``allow.everyone.if.no.acl.found=false``.

Principals come from SASL PLAIN on a SASL_PLAINTEXT listener: ``User:admin`` is the
super user (``super.users``), ``User:alice`` an ordinary one.  Each API is denied to
alice without its grant and allowed once the admin has granted it with ``create_acls``;
``describe_acls`` and ``delete_acls`` see and remove the bindings; ACLs survive a restart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.sasl_acl import client_conf, riverbed_config, sasl_bootstrap

DEADLINE_S = 30.0
TOPIC = "orders"
GROUP = "orders-readers"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    config = riverbed_config({"offsets.topic.num.partitions": "1"})
    embedded = EmbeddedBroker(tmp_path_factory.mktemp("acl-broker"), config).start()
    try:
        admin = AdminClient(conf(embedded, "admin"))
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=DEADLINE_S)
        yield embedded
    finally:
        embedded.stop()


def conf(embedded: EmbeddedBroker, user: str, **extra: Any) -> dict[str, Any]:
    return client_conf(sasl_bootstrap(embedded), user, **extra)


def grant(embedded: EmbeddedBroker, *bindings: AclBinding) -> None:
    admin = AdminClient(conf(embedded, "admin"))
    for future in admin.create_acls(list(bindings)).values():
        future.result(timeout=DEADLINE_S)


def alice_acl(
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, "User:alice", "*", op, AclPermissionType.ALLOW)


def acl_filter(
    rtype: ResourceType,
    name: str | None,
    pattern: ResourcePatternType,
    op: AclOperation,
    permission: AclPermissionType,
) -> AclBindingFilter:
    """A filter matching any principal and host (None: the stubs say str)."""
    return AclBindingFilter(rtype, name, pattern, None, None, op, permission)  # type: ignore[arg-type]


def produce_error(embedded: EmbeddedBroker, topic: str) -> KafkaError | None:
    """Produce one record as alice: the delivery error, None when it was written."""
    producer = Producer(
        conf(embedded, "alice", **{"message.timeout.ms": 5000, "enable.idempotence": False})
    )
    seen: list[KafkaError | None] = []
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: seen.append(err))
    producer.flush(DEADLINE_S)
    assert seen, "no delivery report"
    return seen[0]


def consume_error(embedded: EmbeddedBroker, group: str) -> KafkaError | None:
    """Consume from the start as alice in ``group``: the first error, None on a record."""
    consumer = Consumer(
        conf(
            embedded,
            "alice",
            **{
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            },
        )
    )
    consumer.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                return msg.error()
            consumer.commit(message=msg, asynchronous=False)
            return None
        raise AssertionError("neither a record nor an error")
    finally:
        consumer.close()


def test_alice_is_denied_without_grants(broker: EmbeddedBroker) -> None:
    err = produce_error(broker, TOPIC)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    alice = AdminClient(conf(broker, "alice"))
    assert TOPIC not in alice.list_topics(timeout=DEADLINE_S).topics  # hidden, not failed
    with pytest.raises(KafkaException) as info:
        alice.create_topics([NewTopic("alice-new", 1, 1)])["alice-new"].result(timeout=DEADLINE_S)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as info:
        alice.delete_topics([TOPIC])[TOPIC].result(timeout=DEADLINE_S)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as info:
        alice.create_acls([alice_acl(ResourceType.TOPIC, TOPIC, AclOperation.READ)])[
            alice_acl(ResourceType.TOPIC, TOPIC, AclOperation.READ)
        ].result(timeout=DEADLINE_S)
    assert info.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # DescribeAcls answers CLUSTER_AUTHORIZATION_FAILED (tests/unit/broker/security);
    # librdkafka 2.x reports that top-level error as an empty result.
    everything = acl_filter(
        ResourceType.ANY, None, ResourcePatternType.ANY, AclOperation.ANY, AclPermissionType.ANY
    )
    assert alice.describe_acls(everything).result(timeout=DEADLINE_S) == []


def test_grants_allow_then_deny_overrides(broker: EmbeddedBroker) -> None:
    err = consume_error(broker, GROUP)  # no READ on the topic nor the group
    assert err is not None and err.code() in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
    ), err
    grant(
        broker,
        alice_acl(ResourceType.TOPIC, TOPIC, AclOperation.WRITE),
        alice_acl(ResourceType.TOPIC, TOPIC, AclOperation.READ),
        alice_acl(ResourceType.GROUP, GROUP, AclOperation.READ),
        alice_acl(ResourceType.TOPIC, "alice-", AclOperation.ALL, ResourcePatternType.PREFIXED),
    )
    assert produce_error(broker, TOPIC) is None
    assert consume_error(broker, GROUP) is None
    err = consume_error(broker, "other-group")  # READ on the topic, not on this group
    assert err is not None and err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, err
    alice = AdminClient(conf(broker, "alice"))
    assert TOPIC in alice.list_topics(timeout=DEADLINE_S).topics
    name = f"alice-{uuid.uuid4().hex[:6]}"
    alice.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=DEADLINE_S)
    alice.delete_topics([name])[name].result(timeout=DEADLINE_S)

    # A DENY beats the ALLOW: the admin denies alice WRITE on every topic.
    deny = AclBinding(
        ResourceType.TOPIC,
        "*",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    grant(broker, deny)
    err = produce_error(broker, TOPIC)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    admin = AdminClient(conf(broker, "admin"))
    deleted = admin.delete_acls(
        [
            acl_filter(
                ResourceType.TOPIC,
                "*",
                ResourcePatternType.LITERAL,
                AclOperation.ANY,
                AclPermissionType.DENY,
            )
        ]
    )
    assert [list(f.result(timeout=DEADLINE_S)) for f in deleted.values()] == [[deny]]
    assert produce_error(broker, TOPIC) is None


def test_describe_acls_and_restart(broker: EmbeddedBroker) -> None:
    admin = AdminClient(conf(broker, "admin"))
    match = acl_filter(
        ResourceType.TOPIC,
        TOPIC,
        ResourcePatternType.MATCH,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    described = admin.describe_acls(match).result(timeout=DEADLINE_S)
    assert {(b.name, b.operation) for b in described} >= {
        (TOPIC, AclOperation.READ),
        (TOPIC, AclOperation.WRITE),
    }
    broker.restart()
    assert produce_error(broker, TOPIC) is None  # the grants are durable
    assert consume_error(broker, GROUP) is None


def test_acl_apis_without_authorizer_answer_security_disabled(tmp_path: Path) -> None:
    embedded = EmbeddedBroker(tmp_path / "plain", {"offsets.topic.num.partitions": "1"}).start()
    try:
        address = f"127.0.0.1:{embedded.broker.port}"
        admin = AdminClient({"bootstrap.servers": address})
        binding = alice_acl(ResourceType.TOPIC, TOPIC, AclOperation.READ)
        with pytest.raises(KafkaException) as info:
            admin.create_acls([binding])[binding].result(timeout=DEADLINE_S)
        assert info.value.args[0].code() == KafkaError.SECURITY_DISABLED
        producer = Producer({"bootstrap.servers": address})
        producer.produce("free-for-all", b"v")
        assert producer.flush(DEADLINE_S) == 0  # no authorizer: everything allowed
    finally:
        embedded.stop()


def riverbed(embedded: EmbeddedBroker, *args: str) -> subprocess.CompletedProcess[str]:
    """``riverbed ARGS`` through the console entry point, as the super user."""
    port = embedded.broker.endpoint("SASL_PLAINTEXT")[1]
    sasl = [
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanism=PLAIN",
        "-X",
        "sasl.username=admin",
        "-X",
        "sasl.password=admin-pw",
    ]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from riverbed.cli.main import main; main()",
            *args,
            *sasl,
            "--bootstrap-server",
            f"127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(os.environ),
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_acls_cli(broker: EmbeddedBroker) -> None:
    out = riverbed(
        broker,
        "acls",
        "create",
        "--principal",
        "User:carol",
        "--operation",
        "read",
        "--operation",
        "describe",
        "--group",
        "carol-",
        "--pattern-type",
        "prefixed",
    )
    assert out.returncode == 0, out.stderr
    out = riverbed(broker, "acls", "list", "--principal", "User:carol", "--output", "json")
    assert out.returncode == 0, out.stderr
    assert [
        (r["resource_type"], r["name"], r["pattern_type"], r["operation"])
        for r in json.loads(out.stdout)
    ] == [
        ("GROUP", "carol-", "PREFIXED", "DESCRIBE"),
        ("GROUP", "carol-", "PREFIXED", "READ"),
    ]
    out = riverbed(broker, "acls", "list", "--group", "carol-1", "--pattern-type", "match")
    assert out.returncode == 0 and out.stdout.count("User:carol") == 2, out
    out = riverbed(broker, "acls", "delete", "--principal", "User:carol", "--operation", "read")
    assert out.returncode == 0 and "READ" in out.stdout, out
    out = riverbed(broker, "acls", "list", "--principal", "User:carol")
    assert out.stdout.count("User:carol") == 1, out
