"""CreateTopics honours ``timeout_ms`` (fuzz finding F2): a creation that takes longer is
answered REQUEST_TIMED_OUT and goes on in the background; ``timeout_ms <= 0`` answers
right after validation, as Kafka does."""

from __future__ import annotations

import time
from typing import Any

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreateTopicsRequest, MetadataRequest

Wire = Any
METADATA, CREATE_TOPICS = 3, 19
C = CreateTopicsRequest


def _create(wire: Wire, timeout_ms: int, *topics: tuple[str, int]) -> dict[str, Any]:
    request = C(
        topics=[
            C.CreatableTopic(name=n, num_partitions=p, replication_factor=1) for n, p in topics
        ],
        timeout_ms=timeout_ms,
    )
    return {t.name: t for t in wire.call(CREATE_TOPICS, 7, request).topics}


def _partitions(wire: Wire, name: str) -> int | None:
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False
    )
    topic = wire.call(METADATA, 12, request).topics[0]
    return len(topic.partitions) if topic.error_code == ErrorCode.NONE else None


def _wait_for_topic(wire: Wire, name: str, deadline_s: float = 30.0) -> int:
    deadline = time.monotonic() + deadline_s
    while (count := _partitions(wire, name)) is None:
        assert time.monotonic() < deadline, f"{name} was never created"
        time.sleep(0.05)
    return count


def test_a_slow_creation_times_out_and_finishes_in_the_background(wire: Wire) -> None:
    started = time.monotonic()
    answer = _create(wire, 1, ("big", 256))
    assert time.monotonic() - started < 1.0  # 256 partitions take far longer than 1 ms
    assert answer["big"].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert "continues in the background" in answer["big"].error_message
    # Still being created: the name is taken; then it appears whole.
    again = _create(wire, 50, ("big", 3))
    assert again["big"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert _wait_for_topic(wire, "big") == 256
    # A creation within its timeout is answered normally.
    assert _create(wire, 30_000, ("small", 2))["small"].error_code == ErrorCode.NONE
    assert _partitions(wire, "small") == 2


def test_zero_timeout_answers_after_validation(wire: Wire) -> None:
    answer = _create(wire, 0, ("now", 4), ("bad", 0))
    assert answer["bad"].error_code == ErrorCode.INVALID_PARTITIONS
    assert answer["now"].error_code == ErrorCode.REQUEST_TIMED_OUT
    assert _wait_for_topic(wire, "now") == 4
    assert _partitions(wire, "bad") is None
