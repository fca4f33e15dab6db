"""GROUP resource configs (type 32) and AlterUserScramCredentials duplicates, on Apache
Kafka 4.4 and on Riverbed: the same requests, the same observations.

Each scenario sends raw requests (Riverbed's generated codec over one socket: clients
validate too much to send some of these) and returns what the broker answered; the
expected values are Kafka 4.4's (its ``GroupConfig``: 27 keys, their defaults, types,
broker synonyms and validation words), measured against the reference broker, and both
servers must give them.  ``server44`` (conftest) is parametrised over a Kafka 4.4 reference
started for this module (``kafka44``, tests/compat/conftest.py; the session's reference
is 4.1, whose GROUP configs differ) and Riverbed's broker; ``-m "not kafka"`` runs
Riverbed's only.  Normalised: entries are
sorted by name (Kafka's order is a hash map's), documentation is not asked for, and a
change is described once Kafka has applied it (it goes through the metadata log, a moment
after the answer).  Riverbed's one deliberate difference, ``share.auto.offset.reset=
by_duration:...`` refused, is checked on Riverbed alone.
"""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

import pytest

from riverbed.broker.security.scram import ScramMechanism, salted_password
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.messages import (
    AlterConfigsRequest as Replace,
)
from riverbed.protocol.messages import (
    AlterUserScramCredentialsRequest as Scram,
)
from riverbed.protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    FindCoordinatorRequest,
    ShareGroupHeartbeatRequest,
)
from riverbed.protocol.messages import (
    DescribeConfigsRequest as Describe,
)
from riverbed.protocol.messages import (
    IncrementalAlterConfigsRequest as Alter,
)
from riverbed.testing.wire import WireClient

GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DEFAULT_CONFIG, GROUP_CONFIG = 5, 8
CST, HBI = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
_ids = itertools.count()


@pytest.fixture
def server(server44: Any) -> Any:
    """The server ``new_topic`` (conftest) makes its topics on: this module's."""
    return server44


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


def _describe(
    wire: Wire, group: str, keys: list[str] | None, synonyms: bool = False
) -> list[tuple[Any, ...]]:
    """``(name, value, source, type[, synonyms])`` sorted by name (Kafka's order is a hash
    map's)."""
    request = Describe(
        resources=[
            Describe.DescribeConfigsResource(
                resource_type=GROUP, resource_name=group, configuration_keys=keys
            )
        ],
        include_synonyms=synonyms,
        include_documentation=False,
    )
    result = wire.call(32, 4, request).results[0]
    assert result.error_code == E.NONE, result
    return sorted(
        (c.name, c.value, c.config_source, c.config_type)
        + ((tuple((s.name, s.value, s.source) for s in c.synonyms),) if synonyms else ())
        for c in result.configs
    )


def _settled(wire: Wire, group: str, key: str, want: str | None) -> list[tuple[Any, ...]]:
    """Describe ``key`` (with synonyms) once its value is ``want`` (None: the default, not
    the group's): Kafka applies a GROUP config through its metadata log, a moment after
    the answer."""
    deadline = time.monotonic() + 60
    while True:
        got = _describe(wire, group, [key], synonyms=True)
        own = [c for c in got if c[2] == GROUP_CONFIG]
        if (want is None and not own) or (want is not None and own and own[0][1] == want):
            return got
        assert time.monotonic() < deadline, (key, want, got)
        time.sleep(0.1)


# Kafka 4.4's GROUP keys as measured on the reference broker (with its defaults):
# name -> (default, type, broker synonym or None, internal)
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7
KEYS: dict[str, tuple[str, int, str | None, bool]] = {
    "consumer.session.timeout.ms": ("45000", INT, "group.consumer.session.timeout.ms", False),
    "consumer.heartbeat.interval.ms": ("5000", INT, "group.consumer.heartbeat.interval.ms", False),
    "consumer.assignment.interval.ms": (
        "1000",
        INT,
        "group.consumer.assignment.interval.ms",
        False,
    ),
    "consumer.assignor.offload.enable": (
        "true",
        BOOLEAN,
        "group.consumer.assignor.offload.enable",
        True,
    ),
    "share.session.timeout.ms": ("45000", INT, "group.share.session.timeout.ms", False),
    "share.heartbeat.interval.ms": ("5000", INT, "group.share.heartbeat.interval.ms", False),
    "share.record.lock.duration.ms": ("30000", INT, "group.share.record.lock.duration.ms", False),
    "share.delivery.count.limit": ("5", INT, "group.share.delivery.count.limit", False),
    "share.partition.max.record.locks": (
        "2000",
        INT,
        "group.share.partition.max.record.locks",
        False,
    ),
    "share.auto.offset.reset": ("latest", STRING, None, False),
    "share.isolation.level": ("read_uncommitted", STRING, None, False),
    "share.renew.acknowledge.enable": ("true", BOOLEAN, None, False),
    "share.assignment.interval.ms": ("1000", INT, "group.share.assignment.interval.ms", False),
    "share.assignor.offload.enable": ("true", BOOLEAN, "group.share.assignor.offload.enable", True),
    "streams.session.timeout.ms": ("45000", INT, "group.streams.session.timeout.ms", False),
    "streams.heartbeat.interval.ms": ("5000", INT, "group.streams.heartbeat.interval.ms", False),
    "streams.num.standby.replicas": ("0", INT, "group.streams.num.standby.replicas", False),
    "streams.initial.rebalance.delay.ms": (
        "3000",
        INT,
        "group.streams.initial.rebalance.delay.ms",
        False,
    ),
    "streams.assignment.interval.ms": ("1000", INT, "group.streams.assignment.interval.ms", False),
    "streams.assignor.offload.enable": (
        "true",
        BOOLEAN,
        "group.streams.assignor.offload.enable",
        True,
    ),
    "streams.task.offset.interval.ms": (
        "60000",
        INT,
        "group.streams.task.offset.interval.ms",
        True,
    ),
    "streams.num.warmup.replicas": ("2", INT, "group.streams.num.warmup.replicas", True),
    "streams.rack.aware.assignment.tags": (
        "",
        LIST,
        "group.streams.rack.aware.assignment.tags",
        False,
    ),
    "streams.acceptable.recovery.lag": (
        "10000",
        LONG,
        "group.streams.acceptable.recovery.lag",
        True,
    ),
    "streams.assignor.name": ("sticky", STRING, "group.streams.assignors", False),
    "errors.deadletterqueue.topic.name": ("", STRING, None, False),
    "errors.deadletterqueue.copy.record.enable": ("false", BOOLEAN, None, False),
}

# a value to SET -> what DescribeConfigs then shows
VALID: list[tuple[str, str, str]] = [
    ("consumer.session.timeout.ms", "60000", "60000"),
    ("consumer.session.timeout.ms", " 050000 ", "50000"),
    ("consumer.heartbeat.interval.ms", "15000", "15000"),
    ("consumer.assignment.interval.ms", "0", "0"),
    ("consumer.assignor.offload.enable", "false", "false"),
    ("share.session.timeout.ms", "60000", "60000"),
    ("share.heartbeat.interval.ms", "15000", "15000"),
    ("share.record.lock.duration.ms", "15000", "15000"),
    ("share.delivery.count.limit", "10", "10"),
    ("share.partition.max.record.locks", "100", "100"),
    ("share.auto.offset.reset", " earliest ", "earliest"),
    ("share.isolation.level", "read_committed", "read_committed"),
    ("share.renew.acknowledge.enable", "false", "false"),
    ("share.assignment.interval.ms", "5000", "5000"),
    ("share.assignor.offload.enable", "false", "false"),
    ("streams.session.timeout.ms", "45000", "45000"),
    ("streams.heartbeat.interval.ms", "7000", "7000"),
    ("streams.num.standby.replicas", "2", "2"),
    ("streams.initial.rebalance.delay.ms", "100000", "100000"),
    ("streams.assignment.interval.ms", "0", "0"),
    ("streams.assignor.offload.enable", "false", "false"),
    ("streams.task.offset.interval.ms", "100000", "100000"),
    ("streams.num.warmup.replicas", "0", "0"),
    ("streams.rack.aware.assignment.tags", "a ,b ", "a,b"),
    ("streams.acceptable.recovery.lag", "99999999999", "99999999999"),
    ("streams.assignor.name", "sticky", "sticky"),
    ("errors.deadletterqueue.topic.name", "dlq.x", "dlq.x"),
    # not the broker's errors.deadletterqueue.topic.name.prefix (dlq.): Kafka 4.4 checks
    # that only when it writes a dead letter (tests/integration/share_groups/
    # test_share_dead_letter_prefix.py)
    ("errors.deadletterqueue.topic.name", " orders.dead ", "orders.dead"),
    ("errors.deadletterqueue.copy.record.enable", "True", "true"),
]

_RESET = (
    "Invalid value {v} for configuration share.auto.offset.reset: Invalid value `{v}` for "
    "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' "
    "or of the format 'by_duration:<PnDTnHnMn.nS>'."
)


def _int(key: str, value: str, kind: str = "INT") -> str:
    return f"Invalid value {value} for configuration {key}: Not a number of type {kind}"


def _least(key: str, value: int, least: int) -> str:
    return f"Invalid value {value} for configuration {key}: Value must be at least {least}"


def _range(key: str, low: int, high: int) -> str:
    return f"{key} must be in the range {low} to {high} inclusive."


def _bool(key: str, value: str) -> str:
    return (
        f"Invalid value {value} for configuration {key}: Expected value to be either true or false"
    )


# a value to SET -> Kafka 4.4's INVALID_CONFIG message
INVALID: list[tuple[str, str, str]] = [
    (CST, "44999", _range(CST, 45000, 60000)),
    (CST, "60001", _range(CST, 45000, 60000)),
    (CST, "abc", _int(CST, "abc")),
    (CST, "1e3", _int(CST, "1e3")),
    (CST, "", _int(CST, "")),
    (CST, "2147483648", _int(CST, "2147483648")),
    (CST, "0", _least(CST, 0, 1)),
    (CST, "-1", _least(CST, -1, 1)),
    (HBI, "4999", _range(HBI, 5000, 15000)),
    (HBI, "15001", _range(HBI, 5000, 15000)),
    ("consumer.assignment.interval.ms", "-1", _least("consumer.assignment.interval.ms", -1, 0)),
    (
        "consumer.assignment.interval.ms",
        "999999",
        _range("consumer.assignment.interval.ms", 0, 15000),
    ),
    ("consumer.assignor.offload.enable", "yes", _bool("consumer.assignor.offload.enable", "yes")),
    ("consumer.assignor.offload.enable", "1", _bool("consumer.assignor.offload.enable", "1")),
    ("share.session.timeout.ms", "44999", _range("share.session.timeout.ms", 45000, 60000)),
    ("share.heartbeat.interval.ms", "15001", _range("share.heartbeat.interval.ms", 5000, 15000)),
    (
        "share.record.lock.duration.ms",
        "14999",
        _range("share.record.lock.duration.ms", 15000, 60000),
    ),
    ("share.record.lock.duration.ms", "999", _least("share.record.lock.duration.ms", 999, 1000)),
    ("share.delivery.count.limit", "1", _least("share.delivery.count.limit", 1, 2)),
    ("share.delivery.count.limit", "11", _range("share.delivery.count.limit", 2, 10)),
    ("share.partition.max.record.locks", "99", _least("share.partition.max.record.locks", 99, 100)),
    (
        "share.partition.max.record.locks",
        "4001",
        _range("share.partition.max.record.locks", 100, 4000),
    ),
    ("share.auto.offset.reset", "EARLIEST", _RESET.format(v="EARLIEST")),
    ("share.auto.offset.reset", "none", _RESET.format(v="none")),
    ("share.auto.offset.reset", "", _RESET.format(v="")),
    ("share.auto.offset.reset", "by_duration:-PT1H", _RESET.format(v="by_duration:-PT1H")),
    ("share.auto.offset.reset", "by_duration:xx", _RESET.format(v="by_duration:xx")),
    ("share.auto.offset.reset", "BY_DURATION:PT1H", _RESET.format(v="BY_DURATION:PT1H")),
    (
        "share.isolation.level",
        "READ_COMMITTED",
        "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be "
        "one of: read_committed, read_uncommitted",
    ),
    ("share.renew.acknowledge.enable", "x", _bool("share.renew.acknowledge.enable", "x")),
    ("share.assignment.interval.ms", "-1", _least("share.assignment.interval.ms", -1, 0)),
    ("share.assignor.offload.enable", "x", _bool("share.assignor.offload.enable", "x")),
    ("streams.session.timeout.ms", "60001", _range("streams.session.timeout.ms", 45000, 60000)),
    ("streams.heartbeat.interval.ms", "4999", _range("streams.heartbeat.interval.ms", 5000, 15000)),
    (
        "streams.num.standby.replicas",
        "3",
        "streams.num.standby.replicas must be less than or equal to 2",
    ),
    ("streams.num.standby.replicas", "-1", _least("streams.num.standby.replicas", -1, 0)),
    (
        "streams.initial.rebalance.delay.ms",
        "-1",
        _least("streams.initial.rebalance.delay.ms", -1, 0),
    ),
    (
        "streams.assignment.interval.ms",
        "100000",
        _range("streams.assignment.interval.ms", 0, 15000),
    ),
    ("streams.assignor.offload.enable", "x", _bool("streams.assignor.offload.enable", "x")),
    (
        "streams.task.offset.interval.ms",
        "1",
        "streams.task.offset.interval.ms must be greater than or equal to 15000",
    ),
    ("streams.task.offset.interval.ms", "0", _least("streams.task.offset.interval.ms", 0, 1)),
    (
        "streams.num.warmup.replicas",
        "100",
        "streams.num.warmup.replicas must be less than or equal to 20",
    ),
    (
        "streams.rack.aware.assignment.tags",
        "a,a",
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
    ),
    (
        "streams.rack.aware.assignment.tags",
        "a,,b",
        "Configuration 'streams.rack.aware.assignment.tags' values must not be empty.",
    ),
    ("streams.acceptable.recovery.lag", "-1", _least("streams.acceptable.recovery.lag", -1, 0)),
    (
        "streams.acceptable.recovery.lag",
        "abc",
        _int("streams.acceptable.recovery.lag", "abc", "LONG"),
    ),
    (
        "streams.assignor.name",
        "highest",
        "streams.assignor.name 'highest' is not a registered task assignor. Registered assignors "
        "are: [sticky].",
    ),
    (
        "errors.deadletterqueue.topic.name",
        "__x",
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
    ),
    (
        "errors.deadletterqueue.copy.record.enable",
        "x",
        _bool("errors.deadletterqueue.copy.record.enable", "x"),
    ),
    ("no.such.config", "1", "Unknown group config name: no.such.config"),
]


def _group() -> str:
    return f"gc-{next(_ids)}-{uuid.uuid4().hex[:6]}"


def test_a_fresh_group_is_described_like_kafka(server44: Any) -> None:
    shown = {k: v for k, v in KEYS.items() if not v[3]}  # internal keys only once set
    plain = sorted((k, d, DEFAULT_CONFIG, t) for k, (d, t, _s, _i) in shown.items())
    with_synonyms = sorted(
        (k, d, DEFAULT_CONFIG, t, ((s or k, d, DEFAULT_CONFIG),))
        for k, (d, t, s, _i) in shown.items()
    )
    wire = Wire(server44.bootstrap_servers)
    try:
        group = _group()
        assert _describe(wire, group, None) == plain
        assert _describe(wire, group, None, synonyms=True) == with_synonyms
        assert _describe(wire, group, [CST, "no.such.config"]) == [
            (CST, "45000", DEFAULT_CONFIG, INT)
        ]
        assert _describe(wire, group, ["streams.num.warmup.replicas"]) == []  # internal
    finally:
        wire.close()


def test_every_key_set_and_deleted_is_described_like_kafka(server44: Any) -> None:
    wire = Wire(server44.bootstrap_servers)
    try:
        for key, value, shown in VALID:
            default, kind, synonym, internal = KEYS[key]
            group = _group()
            assert _alter(wire, group, [(key, SET, value)]) == (E.NONE, None), (key, value)
            assert _settled(wire, group, key, shown) == [
                (
                    key,
                    shown,
                    GROUP_CONFIG,
                    kind,
                    ((key, shown, GROUP_CONFIG), (synonym or key, default, DEFAULT_CONFIG)),
                )
            ]
            assert _describe(wire, group, [key]) == [(key, shown, GROUP_CONFIG, kind)]
            assert _alter(wire, group, [(key, DELETE, None)]) == (E.NONE, None)
            after = (
                []
                if internal
                else [
                    (
                        key,
                        default,
                        DEFAULT_CONFIG,
                        kind,
                        ((synonym or key, default, DEFAULT_CONFIG),),
                    )
                ]
            )
            assert _settled(wire, group, key, None) == after
    finally:
        wire.close()


def test_invalid_values_are_refused_with_kafkas_words(server44: Any) -> None:
    wire = Wire(server44.bootstrap_servers)
    try:
        group = _group()
        for key, value, message in INVALID:
            assert _alter(wire, group, [(key, SET, value)]) == (E.INVALID_CONFIG, message), key
        assert _describe(wire, group, None) == _describe(wire, _group(), None)  # none applied
    finally:
        wire.close()


def test_requests_are_checked_like_kafka(server44: Any) -> None:
    wire = Wire(server44.bootstrap_servers)
    try:
        group = _group()
        # Kafka's order of checks when several things are wrong: names, rack tags, types
        # (definition order), then the broker bounds (validateValues order)
        cases: list[tuple[list[tuple[str, int, str | None]], tuple[int, str | None]]] = [
            ([(CST, SET, "50000"), (HBI, SET, "1")], (E.INVALID_CONFIG, _range(HBI, 5000, 15000))),
            ([(HBI, SET, "1"), (CST, SET, "1")], (E.INVALID_CONFIG, _range(HBI, 5000, 15000))),
            (
                [("streams.num.standby.replicas", SET, "9"), (CST, SET, "abc")],
                (E.INVALID_CONFIG, _int(CST, "abc")),
            ),
            (
                [
                    ("streams.num.standby.replicas", SET, "9"),
                    ("nope", SET, "abc"),
                    ("streams.rack.aware.assignment.tags", SET, "a,a"),
                ],
                (E.INVALID_CONFIG, "Unknown group config name: nope"),
            ),
            (
                [(CST, SET, "abc"), ("streams.rack.aware.assignment.tags", SET, "a,a")],
                (
                    E.INVALID_CONFIG,
                    "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
                ),
            ),
            (
                [(CST, SET, "50000"), (CST, DELETE, None)],
                (E.INVALID_REQUEST, "Error due to duplicate config keys"),
            ),
            ([(CST, SET, None)], (E.INVALID_REQUEST, f"Null value not supported for : {CST}")),
            (
                [(CST, APPEND, "1")],
                (E.INVALID_CONFIG, f"Can't APPEND to key {CST} because its type is not LIST."),
            ),
            (
                [("streams.rack.aware.assignment.tags", SUBTRACT, "a")],
                (
                    E.INVALID_CONFIG,
                    "Can't SUBTRACT to key streams.rack.aware.assignment.tags because its type "
                    "is not LIST.",
                ),
            ),
            (
                [("nope", APPEND, "a")],
                (E.INVALID_CONFIG, "Can't APPEND to key nope because its type is not LIST."),
            ),
            ([(CST, 9, "1")], (E.UNKNOWN_SERVER_ERROR, None)),
            ([("nope", DELETE, None)], (E.NONE, None)),  # deleting what is not set: fine
        ]
        for ops, expected in cases:
            assert _alter(wire, group, ops) == expected, ops
        assert _describe(wire, group, None) == _describe(wire, _group(), None)  # none applied
        assert _alter(wire, "", [(CST, SET, "50000")]) == (
            E.INVALID_REQUEST,
            "Default group resources are not allowed.",
        )
        empty = Describe(
            resources=[
                Describe.DescribeConfigsResource(
                    resource_type=GROUP, resource_name="", configuration_keys=None
                )
            ],
            include_synonyms=False,
            include_documentation=False,
        )
        result = wire.call(32, 4, empty).results[0]
        assert (result.error_code, result.error_message) == (
            E.INVALID_REQUEST,
            "Group name must not be empty",
        )
        # validate_only changes nothing; two keys in one request are applied together
        other = _group()
        assert _alter(wire, other, [(CST, SET, "55000")], validate=True) == (E.NONE, None)
        assert _describe(wire, other, [CST]) == [(CST, "45000", DEFAULT_CONFIG, INT)]
        assert _alter(wire, group, [(CST, SET, "50000"), (HBI, SET, "6000")]) == (E.NONE, None)
        _settled(wire, group, HBI, "6000")
        assert _settled(wire, group, CST, "50000")[0][:3] == (CST, "50000", GROUP_CONFIG)
    finally:
        wire.close()


def _replace(
    wire: Wire, group: str, configs: list[tuple[str, str | None]], validate: bool = False
) -> tuple[int, str | None]:
    """AlterConfigs (key 33): the group's configs become exactly ``configs``."""
    request = Replace(
        resources=[
            Replace.AlterConfigsResource(
                resource_type=GROUP,
                resource_name=group,
                configs=[Replace.AlterableConfig(name=n, value=v) for n, v in configs],
            )
        ],
        validate_only=validate,
    )
    answer = wire.call(33, 2, request).responses[0]
    return answer.error_code, answer.error_message


def _own(wire: Wire, group: str, want: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The group's own ``(name, value)`` once they are ``want`` (Kafka applies a moment
    after the answer); what they are at the deadline otherwise."""
    deadline = time.monotonic() + 60
    while True:
        own = [(c[0], c[1]) for c in _describe(wire, group, None) if c[2] == GROUP_CONFIG]
        if own == want or time.monotonic() > deadline:
            return own
        time.sleep(0.1)


def test_alter_configs_replaces_a_groups_whole_set_like_kafka(server44: Any) -> None:
    wire = Wire(server44.bootstrap_servers)
    try:
        group = _group()
        limit = "share.delivery.count.limit"
        assert _alter(wire, group, [(CST, SET, "50000"), (limit, SET, "3")]) == (E.NONE, None)
        assert _own(wire, group, [(CST, "50000"), (limit, "3")]) == [(CST, "50000"), (limit, "3")]
        assert _replace(wire, group, [(HBI, "6000")]) == (E.NONE, None)
        assert _own(wire, group, [(HBI, "6000")]) == [(HBI, "6000")]
        for configs, expected in [
            ([(HBI, "1")], (E.INVALID_CONFIG, _range(HBI, 5000, 15000))),
            ([("nope", "1")], (E.INVALID_CONFIG, "Unknown group config name: nope")),
            ([(HBI, None)], (E.INVALID_REQUEST, f"Null value not supported for : {HBI}")),
            (
                [(HBI, "6000"), (HBI, "7000")],
                (E.INVALID_REQUEST, "Error due to duplicate config keys"),
            ),
        ]:
            assert _replace(wire, group, configs) == expected, configs
        assert _replace(wire, "", [(HBI, "6000")]) == (
            E.INVALID_REQUEST,
            "Default group resources are not allowed.",
        )
        assert _replace(wire, group, [(limit, "4")], validate=True) == (E.NONE, None)
        assert _own(wire, group, [(HBI, "6000")]) == [(HBI, "6000")]
        assert _replace(wire, group, []) == (E.NONE, None)
        assert _own(wire, group, []) == []
    finally:
        wire.close()


def test_by_duration_is_refused_by_riverbed(riverbed_broker: Any) -> None:
    """Kafka 4.4 accepts ``by_duration:PT1H``; Riverbed's share partitions start only at
    the earliest or latest offset, so it refuses it rather than start at the latest."""
    wire = Wire(riverbed_broker.bootstrap_servers)
    try:
        key = "share.auto.offset.reset"
        code, message = _alter(wire, _group(), [(key, SET, "by_duration:PT1H")])
        assert code == E.INVALID_CONFIG
        assert message is not None and "by_duration is not supported by Riverbed" in message
    finally:
        wire.close()


@pytest.mark.parametrize("kind", ["consumer", "share"])
def test_the_heartbeat_interval_of_the_group_is_what_members_get(
    server44: Any, new_topic: Any, kind: str
) -> None:
    """``consumer.heartbeat.interval.ms`` / ``share.heartbeat.interval.ms`` set on the group
    is the interval its KIP-848 / KIP-932 members are told."""
    topic = new_topic(partitions=1)
    group = f"hb-{next(_ids)}-{uuid.uuid4().hex[:6]}"
    key = HBI if kind == "consumer" else "share.heartbeat.interval.ms"
    wire = Wire(server44.bootstrap_servers)
    try:
        assert _alter(wire, group, [(key, SET, "7000")]) == (E.NONE, None)
        _settled(wire, group, key, "7000")
        join: Any
        if kind == "consumer":
            api, version = 68, 0
            join = ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id=str(uuid.uuid4()),
                member_epoch=0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=[topic],
                topic_partitions=[],
            )
        else:
            api, version = 76, 1
            join = ShareGroupHeartbeatRequest(
                group_id=group,
                member_id=uuid.uuid4().hex,
                member_epoch=0,
                subscribed_topic_names=[topic],
            )
        deadline = time.monotonic() + 60
        find = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        while wire.call(10, 4, find).coordinators[0].error_code != E.NONE:  # Kafka creates
            assert time.monotonic() < deadline, "no coordinator"  # __consumer_offsets here
            time.sleep(0.2)
        answer = wire.call(api, version, join)
        # the coordinator may still be loading (__consumer_offsets created on first use)
        while answer.error_code in (
            E.COORDINATOR_NOT_AVAILABLE,
            E.COORDINATOR_LOAD_IN_PROGRESS,
            E.NOT_COORDINATOR,
        ):
            assert time.monotonic() < deadline, answer
            time.sleep(0.2)
            answer = wire.call(api, version, join)
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


def test_one_user_altered_twice_in_a_request_is_duplicate_resource(server44: Any) -> None:
    user, ok = f"dup-{uuid.uuid4().hex[:8]}", f"ok-{uuid.uuid4().hex[:8]}"
    twice = "A user credential cannot be altered twice in the same request"
    wire = Wire(server44.bootstrap_servers)
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
