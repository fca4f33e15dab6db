"""Fetch's decisions against in-memory fakes: limits, errors, long polling."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.handlers import fetch
from riverbed.errors import LogDeletedError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import FetchRequest
from riverbed.protocol.topic_partition import TopicPartition

V = 12  # topics by name
V_IDS = fetch.TOPIC_IDS_VERSION


def _request(
    *parts: tuple[str, int, int],
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    min_bytes: int = 0,
    max_wait_ms: int = 0,
) -> FetchRequest:
    by_topic: dict[str, list[FetchRequest.FetchPartition]] = {}
    for name, index, offset in parts:
        by_topic.setdefault(name, []).append(
            FetchRequest.FetchPartition(
                partition=index, fetch_offset=offset, partition_max_bytes=partition_max_bytes
            )
        )
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=[FetchRequest.FetchTopic(topic=n, partitions=ps) for n, ps in by_topic.items()],
    )


def _rows(response: Any) -> list[tuple[int, int, int, bytes]]:
    return [
        (p.partition_index, p.error_code, p.high_watermark, bytes(p.records))
        for t in response.responses
        for p in t.partitions
    ]


def _broker_with(*batches: bytes, partitions: int = 1) -> FakeBroker:
    broker = FakeBroker()
    broker.topics.add("t", partitions)
    for data in batches:
        broker.topics.logs[("t", 0)].append(data)
    return broker


def test_reads_stored_batches_from_the_offset() -> None:
    broker = _broker_with(b"aa", b"bb", b"cc")
    response = answer(fetch.handle, broker, ctx(fetch.API_KEY, V), _request(("t", 0, 1)))
    assert _rows(response) == [(0, ErrorCode.NONE, 3, b"bbcc")]
    assert response.session_id == 0


def test_errors_answer_per_partition_with_empty_records_and_at_once() -> None:
    broker = _broker_with(b"aa")
    request = _request(("t", 0, 9), ("t", 3, 0), ("gone", 0, 0), min_bytes=1, max_wait_ms=60_000)
    response = answer(fetch.handle, broker, ctx(fetch.API_KEY, V), request)
    assert _rows(response) == [
        (0, ErrorCode.OFFSET_OUT_OF_RANGE, -1, b""),
        (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, b""),
        (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, b""),
    ]
    assert broker.purgatory.waiting() == 0


def test_first_partition_gets_one_batch_over_the_limits_the_rest_nothing() -> None:
    broker = _broker_with(b"x" * 100, partitions=2)
    broker.topics.logs[("t", 1)].append(b"y" * 100)
    request = _request(("t", 0, 0), ("t", 1, 0), max_bytes=10, partition_max_bytes=10)
    rows = _rows(answer(fetch.handle, broker, ctx(fetch.API_KEY, V), request))
    assert rows == [(0, ErrorCode.NONE, 1, b"x" * 100), (1, ErrorCode.NONE, 1, b"")]


def test_max_bytes_is_capped_by_the_brokers_fetch_max_bytes() -> None:
    broker = _broker_with(b"a")
    broker.config = type(broker.config)(fetch_max_bytes=1000)
    request = _request(("t", 0, 0), max_bytes=0)
    answer(fetch.handle, broker, ctx(fetch.API_KEY, V), request)
    assert request.max_bytes == 1000


def test_unknown_topic_id_is_unknown_topic_id() -> None:
    broker = _broker_with(b"a")
    topic = broker.topics.get("t")
    assert topic is not None
    part = FetchRequest.FetchPartition(partition=0, partition_max_bytes=100)
    request = FetchRequest(
        max_bytes=1 << 20,
        topics=[
            FetchRequest.FetchTopic(topic_id=topic.topic_id, partitions=[part]),
            FetchRequest.FetchTopic(topic_id=uuid.uuid4(), partitions=[part]),
        ],
    )
    response = answer(fetch.handle, broker, ctx(fetch.API_KEY, V_IDS), request)
    first = response.responses[0]
    assert (first.topic, first.topic_id) == ("", topic.topic_id)
    assert [r[:2] for r in _rows(response)] == [
        (0, ErrorCode.NONE),
        (0, ErrorCode.UNKNOWN_TOPIC_ID),
    ]


def test_a_log_deleted_after_it_was_found_answers_as_an_unknown_topic() -> None:
    # The deletion began between _resolve (on the loop) and the read (off the loop):
    # the log refuses with LogDeletedError; answered as a fetch arriving now would be
    # (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID by id), never KAFKA_STORAGE_ERROR.
    broker = _broker_with(b"a")
    broker.topics.logs[("t", 0)].read_error = LogDeletedError("t-0 was deleted")
    by_name = answer(fetch.handle, broker, ctx(fetch.API_KEY, V), _request(("t", 0, 1)))
    assert _rows(by_name) == [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, b"")]
    topic = broker.topics.get("t")
    assert topic is not None
    part = FetchRequest.FetchPartition(partition=0, fetch_offset=1, partition_max_bytes=100)
    request = FetchRequest(
        max_bytes=1 << 20,
        topics=[FetchRequest.FetchTopic(topic_id=topic.topic_id, partitions=[part])],
    )
    by_id = answer(fetch.handle, broker, ctx(fetch.API_KEY, V_IDS), request)
    assert _rows(by_id) == [(0, ErrorCode.UNKNOWN_TOPIC_ID, -1, b"")]


def test_long_poll_is_woken_by_an_append_on_its_partition() -> None:
    broker = _broker_with()

    async def scenario() -> None:
        pending = fetch.handle(
            broker,
            ctx(fetch.API_KEY, V),
            _request(("t", 0, 0), min_bytes=1, max_wait_ms=60_000),
        )
        assert isinstance(pending, asyncio.Future)
        await asyncio.sleep(0.01)
        assert not pending.done() and broker.purgatory.waiting() == 1
        broker.topics.logs[("t", 0)].append(b"new")
        broker.purgatory.notify(TopicPartition("t", 0))
        response = await asyncio.wait_for(pending, 5)
        assert _rows(response) == [(0, ErrorCode.NONE, 1, b"new")]
        assert broker.purgatory.waiting() == 0

    asyncio.run(scenario())


def test_long_poll_answers_empty_at_its_deadline() -> None:
    broker = _broker_with()
    request = _request(("t", 0, 0), min_bytes=1, max_wait_ms=20)
    assert _rows(answer(fetch.handle, broker, ctx(fetch.API_KEY, V), request)) == [
        (0, ErrorCode.NONE, 0, b"")
    ]
    assert broker.purgatory.waiting() == 0


def test_a_closing_broker_does_not_long_poll() -> None:
    broker = _broker_with()
    broker.closing = True
    request = _request(("t", 0, 0), min_bytes=1, max_wait_ms=60_000)
    result = asyncio.run(_call_sync(broker, request))
    assert not isinstance(result, asyncio.Future)


async def _call_sync(broker: FakeBroker, request: FetchRequest) -> Any:
    return fetch.handle(broker, ctx(fetch.API_KEY, V), request)


def test_read_limit_is_the_smaller_of_the_sum_and_max_bytes() -> None:
    request = _request(("t", 0, 0), ("t", 1, 0), partition_max_bytes=300, max_bytes=500)
    assert fetch.read_limit(request) == 500
    request.max_bytes = 0
    assert fetch.read_limit(request) == 600
