"""GROUP resource configs (type 32) beyond share.* and AlterUserScramCredentials duplicates,
on the reference Kafka and on Riverbed: the same requests, the same observations.

Each scenario sends raw requests (Riverbed's generated codec over one socket: clients
validate too much to send some of these) and returns what the broker answered; the
expected values are Kafka 4.4's, measured against the reference broker, and both servers
must give them (``server`` is parametrised over both; ``-m "not kafka"`` runs Riverbed's).
Kafka's DescribeConfigs also returns synonyms and more GROUP keys (``*.assignment.interval
.ms``, ``share.session.timeout.ms`` ...): only the keys named are compared.
"""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

from riverbed.broker.security.scram import ScramMechanism, salted_password
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.messages import (
    AlterUserScramCredentialsRequest as Scram,
)
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
)
from riverbed.protocol.messages import (
    DescribeConfigsRequest as Describe,
)
from riverbed.protocol.messages import (
    IncrementalAlterConfigsRequest as Alter,
)
from riverbed.testing.wire import WireClient

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
DEFAULT_CONFIG, GROUP_CONFIG = 5, 8
_ids = itertools.count()


class Wire(WireClient):
    """A wire client named ``riverbed-compat``."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap, client_id="riverbed-compat")


def _alter(
    wire: Wire, group: str, ops: list[tuple[str, int, str | None]], validate: bool = False
) -> tuple[int, str | None]:
    request = Alter(
        resources=[
            Alter.AlterConfigsResource(
                resource_type=GROUP,
                resource_name=group,
                configs=[
                    Alter.AlterableConfig(name=n, config_operation=o, value=v) for n, o, v in ops
                ],
            )
        ],
        validate_only=validate,
    )
    answer = wire.call(44, 1, request).responses[0]
    return answer.error_code, answer.error_message


def _describe(wire: Wire, group: str, keys: list[str]) -> list[tuple[str, str | None, int]]:
    request = Describe(
        resources=[
            Describe.DescribeConfigsResource(
                resource_type=GROUP, resource_name=group, configuration_keys=keys
            )
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    result = wire.call(32, 4, request).results[0]
    assert result.error_code == E.NONE
    return sorted((c.name, c.value, c.config_source) for c in result.configs)


CST, HBI = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"


def _words_of_44(server: Any) -> bool:
    """Kafka 4.4's messages (the session's reference Kafka may be older: 4.1 words its
    range errors differently, with the same code)."""
    version = getattr(server, "version", None)
    return version is None or tuple(int(x) for x in version.split(".")[:2]) >= (4, 4)


def test_consumer_group_configs_validate_like_kafka(server: Any) -> None:
    group = f"gc-{next(_ids)}-{uuid.uuid4().hex[:6]}"
    words = _words_of_44(server)
    wire = Wire(server.bootstrap_servers)
    try:
        assert _alter(wire, group, [(CST, SET, "50000")]) == (E.NONE, None)
        assert _alter(wire, group, [(HBI, SET, "6000")]) == (E.NONE, None)
        for key, values, low, high in [
            (CST, ("1000", "70000"), 45000, 60000),
            (HBI, ("100", "50000"), 5000, 15000),
        ]:
            for value in values:
                code, message = _alter(wire, group, [(key, SET, value)])
                assert code == E.INVALID_CONFIG
                if words:
                    assert message == f"{key} must be in the range {low} to {high} inclusive."
        assert _alter(wire, group, [(CST, SET, "abc")]) == (
            E.INVALID_CONFIG,
            f"Invalid value abc for configuration {CST}: Not a number of type INT",
        )
        assert _alter(wire, group, [("no.such.config", SET, "1")]) == (
            E.INVALID_CONFIG,
            "Unknown group config name: no.such.config",
        )
        assert _alter(wire, group, [(CST, APPEND, "1")]) == (
            E.INVALID_CONFIG,
            f"Can't APPEND to key {CST} because its type is not LIST.",
        )
        # validate_only changes nothing
        other = group + "-v"
        assert _alter(wire, other, [(CST, SET, "55000")], validate=True) == (E.NONE, None)
        assert _describe(wire, other, [CST]) == [(CST, "45000", DEFAULT_CONFIG)]
        assert _describe(wire, group, [CST, HBI]) == [
            (HBI, "6000", GROUP_CONFIG),
            (CST, "50000", GROUP_CONFIG),
        ]
        assert _alter(wire, group, [(CST, DELETE, None)]) == (E.NONE, None)
        assert _describe(wire, group, [CST]) == [(CST, "45000", DEFAULT_CONFIG)]
    finally:
        wire.close()


def test_consumer_heartbeat_interval_of_the_group_is_what_members_get(
    server: Any, new_topic: Any
) -> None:
    topic = new_topic(partitions=1)
    group = f"hb-{next(_ids)}-{uuid.uuid4().hex[:6]}"
    wire = Wire(server.bootstrap_servers)
    try:
        assert _alter(wire, group, [(HBI, SET, "7000")]) == (E.NONE, None)
        join = ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=str(uuid.uuid4()),
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=[topic],
            topic_partitions=[],
        )
        deadline = time.monotonic() + 60
        find = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        while wire.call(10, 4, find).coordinators[0].error_code != E.NONE:  # Kafka creates
            assert time.monotonic() < deadline, "no coordinator"  # __consumer_offsets here
            time.sleep(0.2)
        answer = wire.call(68, 0, join)
        # the coordinator may still be loading (__consumer_offsets created on first use)
        while answer.error_code in (
            E.COORDINATOR_NOT_AVAILABLE,
            E.COORDINATOR_LOAD_IN_PROGRESS,
            E.NOT_COORDINATOR,
        ):
            assert time.monotonic() < deadline, answer
            time.sleep(0.2)
            answer = wire.call(68, 0, join)
        assert (answer.error_code, answer.heartbeat_interval_ms) == (E.NONE, 7000)
    finally:
        wire.close()


def _upsert(name: str, mechanism: int) -> Scram.ScramCredentialUpsertion:
    salt = b"0123456789abcdef"
    return Scram.ScramCredentialUpsertion(
        name=name,
        mechanism=mechanism,
        iterations=4096,
        salt=salt,
        salted_password=salted_password(ScramMechanism(mechanism), "pw", salt, 4096),
    )


def test_one_user_altered_twice_in_a_request_is_duplicate_resource(server: Any) -> None:
    user, ok = f"dup-{uuid.uuid4().hex[:8]}", f"ok-{uuid.uuid4().hex[:8]}"
    twice = "A user credential cannot be altered twice in the same request"
    wire = Wire(server.bootstrap_servers)
    try:
        both = Scram(deletions=[], upsertions=[_upsert(user, 1), _upsert(user, 2), _upsert(ok, 1)])
        answer = wire.call(51, 0, both)
        assert sorted((r.user, r.error_code, r.error_message) for r in answer.results) == sorted(
            [(user, E.DUPLICATE_RESOURCE, twice), (ok, E.NONE, None)]
        )
        delete_and_upsert = Scram(
            deletions=[Scram.ScramCredentialDeletion(name=ok, mechanism=1)],
            upsertions=[_upsert(ok, 2)],
        )
        answer = wire.call(51, 0, delete_and_upsert)
        assert [(r.user, r.error_code) for r in answer.results] == [(ok, E.DUPLICATE_RESOURCE)]
    finally:
        wire.close()
