"""``segment.bytes`` below 1 MiB and ``internal.segment.bytes``, on the reference Kafka and
on Riverbed: the same requests, the same observations (Kafka 4.x's rule, measured on 4.1
and 4.4 alike).

A request setting ``segment.bytes`` below 1048576 (CreateTopics, AlterConfigs,
IncrementalAlterConfigs) is INVALID_CONFIG "Invalid value N for configuration
segment.bytes: Value must be at least 1048576"; ``internal.segment.bytes`` (Kafka's
internal topic config for tests) takes any size, is described only where set (source
DYNAMIC_TOPIC_CONFIG, no default synonym) and leaves ``segment.bytes`` described as it
is.  On Riverbed the small segments are then checked to roll.
"""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.messages import AlterConfigsRequest as Replace
from riverbed.protocol.messages import CreateTopicsRequest as Create
from riverbed.protocol.messages import DescribeConfigsRequest as Describe
from riverbed.protocol.messages import IncrementalAlterConfigsRequest as Alter
from riverbed.testing.scenarios.confluent import produce
from riverbed.testing.scenarios.records import Record
from riverbed.testing.wire import WireClient

TOPIC, SET = 2, 0
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, INT = 1, 5, 3
SEG, INTERNAL = "segment.bytes", "internal.segment.bytes"
_ids = itertools.count()


def _too_small(value: int) -> tuple[int, str]:
    return (
        E.INVALID_CONFIG,
        f"Invalid value {value} for configuration segment.bytes: Value must be at least 1048576",
    )


def _name() -> str:
    return f"seg-{next(_ids)}-{uuid.uuid4().hex[:6]}"


def _create(wire: WireClient, name: str, configs: dict[str, str]) -> tuple[int, str | None]:
    request = Create(
        topics=[
            Create.CreatableTopic(
                name=name,
                num_partitions=1,
                replication_factor=1,
                assignments=[],
                configs=[Create.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
            )
        ],
        timeout_ms=30_000,
        validate_only=False,
    )
    answer = wire.call(19, 5, request).topics[0]
    return answer.error_code, answer.error_message


def _segment_configs(wire: WireClient, name: str, want: str | None = None) -> list[Any]:
    """``(name, value, source, type, synonyms)`` of the two keys; with ``want``, once
    ``internal.segment.bytes`` reads so (Kafka applies a change a moment after the answer)."""
    request = Describe(
        resources=[
            Describe.DescribeConfigsResource(
                resource_type=TOPIC, resource_name=name, configuration_keys=None
            )
        ],
        include_synonyms=True,
        include_documentation=False,
    )
    deadline = time.monotonic() + 30
    while True:
        result = wire.call(32, 4, request).results[0]
        got = sorted(
            (
                c.name,
                c.value,
                c.config_source,
                c.config_type,
                tuple((s.name, s.value, s.source) for s in c.synonyms),
            )
            for c in result.configs
            if c.name in (SEG, INTERNAL)
        )
        if result.error_code == E.NONE and (
            want is None or (INTERNAL, want) in {g[:2] for g in got}
        ):
            return got
        assert time.monotonic() < deadline, (result.error_code, got)
        time.sleep(0.1)


def test_segment_bytes_floor_and_internal_segment_bytes_like_kafka(server: Any) -> None:
    default = ((("log.segment.bytes", "1073741824", DEFAULT_CONFIG),),)
    wire = WireClient(server.bootstrap_servers, client_id="riverbed-compat")
    try:
        assert _create(wire, _name(), {SEG: "200"}) == _too_small(200)
        assert _create(wire, _name(), {SEG: "1048575"}) == _too_small(1048575)
        small = _name()
        assert _create(wire, small, {INTERNAL: "200"}) == (E.NONE, None)
        assert _segment_configs(wire, small) == [
            (
                INTERNAL,
                "200",
                DYNAMIC_TOPIC_CONFIG,
                INT,
                ((INTERNAL, "200", DYNAMIC_TOPIC_CONFIG),),
            ),
            (SEG, "1073741824", DEFAULT_CONFIG, INT, *default),
        ]
        plain = _name()
        assert _create(wire, plain, {SEG: "1048576"}) == (E.NONE, None)
        assert _segment_configs(wire, plain) == [
            (
                SEG,
                "1048576",
                DYNAMIC_TOPIC_CONFIG,
                INT,
                ((SEG, "1048576", DYNAMIC_TOPIC_CONFIG), *default[0]),
            )
        ]
        incremental = Alter(
            resources=[
                Alter.AlterConfigsResource(
                    resource_type=TOPIC,
                    resource_name=plain,
                    configs=[Alter.AlterableConfig(name=SEG, config_operation=SET, value="200")],
                )
            ],
            validate_only=False,
        )
        answer = wire.call(44, 1, incremental).responses[0]
        assert (answer.error_code, answer.error_message) == _too_small(200)
        replace = Replace(
            resources=[
                Replace.AlterConfigsResource(
                    resource_type=TOPIC,
                    resource_name=plain,
                    configs=[Replace.AlterableConfig(name=SEG, value="1000")],
                )
            ],
            validate_only=False,
        )
        answer = wire.call(33, 2, replace).responses[0]
        assert (answer.error_code, answer.error_message) == _too_small(1000)
        incremental.resources[0].configs = [
            Alter.AlterableConfig(name=INTERNAL, config_operation=SET, value="500")
        ]
        answer = wire.call(44, 1, incremental).responses[0]
        assert (answer.error_code, answer.error_message) == (E.NONE, None)
        assert _segment_configs(wire, plain, want="500")[0][:3] == (
            INTERNAL,
            "500",
            DYNAMIC_TOPIC_CONFIG,
        )
    finally:
        wire.close()


def test_internal_segment_bytes_rolls_small_segments(riverbed_broker: Any) -> None:
    name = _name()
    wire = WireClient(riverbed_broker.bootstrap_servers, client_id="riverbed-compat")
    try:
        assert _create(wire, name, {INTERNAL: "300"}) == (E.NONE, None)
    finally:
        wire.close()
    for _ in range(4):  # one ~170-byte batch per produce: each rolls a 300-byte segment
        [result] = produce(riverbed_broker.bootstrap_servers, name, [Record(0, None, bytes(100))])
        assert isinstance(result, tuple), result
    log = riverbed_broker.broker.topics.partition_log(name, 0)
    assert len(log.segments()) >= 3
