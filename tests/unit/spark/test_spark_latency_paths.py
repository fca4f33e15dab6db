"""Latency rules of the source's read loop and the sink's producers, with fake clients.

* A range whose last offset holds no record the consumer returns (a transaction's commit
  marker) ends on the consumer's position, and the ``consume`` call that may end a range
  waits only :data:`~riverbed.spark.partition_reader.CONSUME_WAIT_S` (librdkafka waits the
  whole timeout for a count that can never be reached).
* The at-least-once sink keeps a producer whose rows were all delivered for the next task
  of the same configuration, and drops one that failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from riverbed.spark import partition_reader, sink
from riverbed.spark.options import parse_sink_options
from riverbed.spark.planning import OffsetRange


def record(offset: int) -> Message:
    return Message(
        topic="t", partition=0, offset=offset, key=None, value=b"v%d" % offset, timestamp=(1, 0)
    )


class FakeConsumer:
    """Serves ``answers`` one per ``consume`` call (then nothing); its position is the
    offset after the last record served, or ``position_after[i]`` after call ``i``."""

    def __init__(self, answers: list[list[Message]], position_after: dict[int, int]) -> None:
        self.answers = answers
        self.position_after = position_after
        self.calls: list[tuple[int, float]] = []
        self.closed = False
        self._position = -1001

    def assign(self, partitions: list[KafkaTopicPartition]) -> None:
        self._position = partitions[0].offset

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        index = len(self.calls)
        self.calls.append((num_messages, timeout))
        answer = self.answers[index] if index < len(self.answers) else []
        if answer:
            self._position = answer[-1].offset() + 1
        self._position = self.position_after.get(index, self._position)
        return answer

    def position(self, partitions: list[KafkaTopicPartition]) -> list[KafkaTopicPartition]:
        return [KafkaTopicPartition("t", 0, self._position)]

    def close(self) -> None:
        self.closed = True


def read_with(
    monkeypatch: pytest.MonkeyPatch, consumer: FakeConsumer, start: int, until: int, rows: int
) -> list[int]:
    monkeypatch.setattr(partition_reader, "Consumer", lambda config: consumer)
    batches = partition_reader.read_offset_range(
        {"bootstrap.servers": "unused:9092"},
        OffsetRange("t", 0, start, until),
        include_headers=False,
        fail_on_data_loss=True,
        poll_timeout_ms=30_000,
        batch_rows=rows,
    )
    return [o for b in batches for o in b.column(4).to_pylist()]


def test_a_range_ending_in_a_commit_marker_ends_on_the_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # offset 5: a record, offset 6: the commit marker the consumer skips
    consumer = FakeConsumer([[record(5)]], position_after={0: 7})
    assert read_with(monkeypatch, consumer, 5, 7, rows=100) == [5]
    assert consumer.calls == [(2, partition_reader.CONSUME_WAIT_S)]
    assert consumer.closed


def test_the_marker_seen_one_call_later_ends_the_range_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    consumer = FakeConsumer([[record(5)], []], position_after={1: 7})
    assert read_with(monkeypatch, consumer, 5, 7, rows=100) == [5]
    assert [timeout for _, timeout in consumer.calls] == [partition_reader.CONSUME_WAIT_S] * 2


def test_only_the_call_that_may_end_the_range_waits_briefly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    consumer = FakeConsumer(
        [[record(o) for o in range(0, 4)], [record(o) for o in range(4, 6)]], {}
    )
    assert read_with(monkeypatch, consumer, 0, 6, rows=4) == list(range(6))
    assert consumer.calls == [
        (4, partition_reader.BULK_WAIT_S),
        (2, partition_reader.CONSUME_WAIT_S),
    ]


class FakeProducer:
    """Accepts rows; ``flush`` reports each delivery through its callback, failing
    them all when ``fail`` is set."""

    made = 0

    def __init__(self, config: dict[str, Any]) -> None:
        FakeProducer.made += 1
        self.fail = False
        self.pending: list[Callable[[object, object], None]] = []
        self.closed = False

    def produce(self, topic: str, **kwargs: Any) -> None:
        self.pending.append(kwargs["on_delivery"])

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        error = KafkaError(KafkaError._MSG_TIMED_OUT) if self.fail else None
        for callback in self.pending:
            callback(error, None)
        self.pending.clear()
        return 0

    def close(self) -> None:
        self.closed = True


def rows() -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pydict({"value": pa.array([b"a", b"b"], pa.binary())})


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> sink._ProducerPool:
    fresh = sink._ProducerPool()
    monkeypatch.setattr(sink, "PRODUCERS", fresh)
    monkeypatch.setattr(sink, "Producer", FakeProducer)
    FakeProducer.made = 0
    return fresh


def test_a_delivered_tasks_producer_serves_the_next_task(pool: sink._ProducerPool) -> None:
    options = parse_sink_options({"kafka.bootstrap.servers": "unused:9092", "topic": "out"})
    assert sink.produce_batches(options, rows()) == 2
    assert sink.produce_batches(options, rows()) == 2
    assert FakeProducer.made == 1
    other = parse_sink_options({"kafka.bootstrap.servers": "other:9092", "topic": "out"})
    sink.produce_batches(other, rows())
    assert FakeProducer.made == 2  # another configuration, another producer


def test_a_failed_tasks_producer_is_not_kept(pool: sink._ProducerPool) -> None:
    options = parse_sink_options({"kafka.bootstrap.servers": "unused:9092", "topic": "out"})
    config = {
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        **options.kafka_config(),
    }
    failing = pool.take(config)
    assert isinstance(failing, FakeProducer)
    failing.fail = True
    pool.give_back(config, failing)
    with pytest.raises(KafkaException, match="delivery failed"):
        sink.produce_batches(options, rows())
    assert sink.produce_batches(options, rows()) == 2
    assert FakeProducer.made == 2  # the failed one was dropped, a new one made


def test_idle_producers_are_closed(
    pool: sink._ProducerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sink, "PRODUCER_IDLE_S", 0.2)
    options = parse_sink_options({"kafka.bootstrap.servers": "unused:9092", "topic": "out"})
    sink.produce_batches(options, rows())
    kept = next(iter(pool._idle.values()))[0][1]
    assert isinstance(kept, FakeProducer)
    assert wait_until(lambda: kept.closed, 30)
    assert wait_until(lambda: pool._reaper is None, 30)


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
