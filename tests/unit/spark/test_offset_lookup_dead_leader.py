"""OffsetLookup when a leader dies: librdkafka keeps a ListOffsets for the dead broker
queued past its timeout (confluentinc/librdkafka#1869), so the lookup bounds each attempt
and retries with a fresh client (which learns the new leader); it gives up after
``kafkaConsumer.pollTimeoutMs``.  The admin client is a fake: no broker needed."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

import riverbed.spark.offset_lookup as offset_lookup
from riverbed.errors import ConfigError
from riverbed.protocol.topic_partition import TopicPartition


class _Offset:
    def __init__(self, offset: int) -> None:
        self.offset = offset


def _fake_admin(behaviours: list[str]) -> tuple[type, list[Any]]:
    """An AdminClient class whose n-th instance answers as ``behaviours[n]``: ``stall``
    (futures never done), ``retriable`` (a retriable error), ``invalid`` (offset -1001,
    OFFSET_INVALID) or ``ok`` (offset 42)."""
    created: list[Any] = []

    class FakeAdmin:
        def __init__(self, config: dict[str, Any]) -> None:
            self.behaviour = behaviours[min(len(created), len(behaviours) - 1)]
            created.append(self)

        def poll(self, timeout: float) -> int:
            return 0

        def list_topics(self, timeout: float) -> Any:
            if self.behaviour != "ok":
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata"))
            topic = type("T", (), {"partitions": {0: None, 1: None}, "error": None})()
            return type("M", (), {"topics": {"t": topic}})()

        def list_offsets(self, request: dict[Any, Any], **kwargs: Any) -> dict[Any, Future[Any]]:
            out: dict[Any, Future[Any]] = {}
            for ktp in request:
                future: Future[Any] = Future()
                if self.behaviour == "ok":
                    future.set_result(_Offset(42))
                elif self.behaviour == "invalid":
                    future.set_result(_Offset(-1001))
                elif self.behaviour == "retriable":
                    error = KafkaError(KafkaError.LEADER_NOT_AVAILABLE, "no leader", retriable=True)
                    future.set_exception(KafkaException(error))
                elif self.behaviour == "epoch":  # not flagged retriable by librdkafka
                    error = KafkaError(KafkaError.UNKNOWN_LEADER_EPOCH, "epoch is newer")
                    future.set_exception(KafkaException(error))
                out[ktp] = future
            return out

    return FakeAdmin, created


@pytest.mark.parametrize("first", ["stall", "retriable", "epoch", "invalid"])
def test_a_stalled_retriable_or_offsetless_attempt_is_retried_with_a_fresh_client(
    monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    admin, created = _fake_admin([first, "ok"])
    monkeypatch.setattr(offset_lookup, "AdminClient", admin)
    monkeypatch.setattr(offset_lookup, "ATTEMPT_S", 0.2)
    lookup = offset_lookup.OffsetLookup({"bootstrap.servers": "k1:9092"}, timeout_ms=30_000)
    tp = TopicPartition("t", 0)
    assert lookup.latest([tp]) == {tp: 42}
    assert len(created) == 2


def test_gives_up_after_the_poll_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    admin, created = _fake_admin(["stall"])
    monkeypatch.setattr(offset_lookup, "AdminClient", admin)
    monkeypatch.setattr(offset_lookup, "ATTEMPT_S", 0.2)
    lookup = offset_lookup.OffsetLookup({"bootstrap.servers": "k1:9092"}, timeout_ms=1_000)
    with pytest.raises(ConfigError, match=r"ListOffsets for t-0 failed .* for 1 s: no answer"):
        lookup.earliest([TopicPartition("t", 0)])
    assert len(created) >= 2


def test_a_metadata_request_that_times_out_is_retried_with_a_fresh_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admin, created = _fake_admin(["stall", "ok"])
    monkeypatch.setattr(offset_lookup, "AdminClient", admin)
    lookup = offset_lookup.OffsetLookup({"bootstrap.servers": "k1:9092"}, timeout_ms=30_000)
    assert lookup.partition_counts() == {"t": 2}
    assert len(created) == 2
