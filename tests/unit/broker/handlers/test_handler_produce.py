"""Produce's decisions against in-memory fakes: acks, per-partition errors, flush waits."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from typing import Any

from handler_fakes import FakeBroker, answer, ctx, done_future

from riverbed.broker.handlers import produce
from riverbed.errors import CorruptRecordError, InvalidRecordError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import ProduceRequest
from riverbed.protocol.topic_partition import TopicPartition

V = 9  # topics by name
V_IDS = produce.TOPIC_IDS_VERSION


def _request(acks: int, *parts: tuple[str, int, bytes | None], topic_id: Any = None) -> Any:
    by_topic: dict[str, list[ProduceRequest.PartitionProduceData]] = {}
    for name, index, records in parts:
        by_topic.setdefault(name, []).append(
            ProduceRequest.PartitionProduceData(index=index, records=records)
        )
    topics = [
        ProduceRequest.TopicProduceData(
            name=name, topic_id=topic_id or uuid.UUID(int=0), partition_data=data
        )
        for name, data in by_topic.items()
    ]
    return ProduceRequest(acks=acks, timeout_ms=1000, topic_data=topics)


def _rows(response: Any) -> list[tuple[str, int, int, int]]:
    return [
        (t.name, p.index, p.error_code, p.base_offset)
        for t in response.responses
        for p in t.partition_responses
    ]


def test_acks_1_appends_answers_offsets_and_wakes_fetches() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 2)
    request = _request(1, ("t", 0, b"a"), ("t", 0, b"b"), ("t", 1, b"c"))
    response = answer(produce.handle, broker, ctx(produce.API_KEY, V), request)
    assert _rows(response) == [
        ("t", 0, ErrorCode.NONE, 0),
        ("t", 0, ErrorCode.NONE, 1),
        ("t", 1, ErrorCode.NONE, 0),
    ]
    assert broker.purgatory.notified == [TopicPartition("t", 0)] * 2 + [TopicPartition("t", 1)]
    assert broker.topics.logs[("t", 0)].flushes_asked == []  # acks=1 never waits for fsync


def test_one_unknown_partition_does_not_fail_the_others() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 1)
    request = _request(1, ("t", 0, b"a"), ("t", 5, b"b"), ("nope", 0, b"c"))
    rows = _rows(answer(produce.handle, broker, ctx(produce.API_KEY, V), request))
    assert rows == [
        ("t", 0, ErrorCode.NONE, 0),
        ("t", 5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]


def test_acks_0_appends_and_sends_no_response() -> None:
    broker = FakeBroker()
    broker.topics.add("t")
    assert answer(produce.handle, broker, ctx(0, V), _request(0, ("t", 0, b"a"))) is None
    assert broker.topics.logs[("t", 0)].batches == [(0, b"a")]


def test_bad_acks_fails_existing_partitions_after_the_unknown_check() -> None:
    broker = FakeBroker()
    broker.topics.add("t")
    request = _request(2, ("t", 0, b"a"), ("t", 1, b"b"))
    rows = _rows(answer(produce.handle, broker, ctx(0, V), request))
    assert [r[2] for r in rows] == [
        ErrorCode.INVALID_REQUIRED_ACKS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert broker.topics.logs[("t", 0)].batches == []


def test_missing_records_and_refused_batches_map_to_their_codes() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 2)
    broker.topics.logs[("t", 1)].append_error = CorruptRecordError("bad crc")
    response = answer(
        produce.handle, broker, ctx(0, V), _request(1, ("t", 0, None), ("t", 1, b"x"))
    )
    parts = response.responses[0].partition_responses
    assert [p.error_code for p in parts] == [ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE]
    assert parts[1].error_message == "bad crc"
    assert broker.purgatory.notified == []


def test_keyless_records_on_a_compacted_topic_are_named_in_record_errors() -> None:
    broker = FakeBroker()
    broker.topics.add("t")
    broker.topics.logs[("t", 0)].append_error = InvalidRecordError(
        "One or more records have been rejected", ((0, "no key"), (2, "no key"))
    )
    response = answer(produce.handle, broker, ctx(0, V), _request(1, ("t", 0, b"x")))
    [part] = response.responses[0].partition_responses
    assert part.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (0, "no key"),
        (2, "no key"),
    ]


def test_topic_ids_resolve_and_an_unknown_id_fails_its_partitions() -> None:
    broker = FakeBroker()
    topic = broker.topics.add("t")
    known = answer(
        produce.handle, broker, ctx(0, V_IDS), _request(1, ("", 0, b"a"), topic_id=topic.topic_id)
    )
    assert _rows(known) == [("t", 0, ErrorCode.NONE, 0)]
    unknown = answer(
        produce.handle, broker, ctx(0, V_IDS), _request(1, ("", 0, b"a"), topic_id=uuid.uuid4())
    )
    assert _rows(unknown) == [("", 0, ErrorCode.UNKNOWN_TOPIC_ID, -1)]


def test_acks_all_answers_only_after_the_flush_covering_the_batch() -> None:
    broker = FakeBroker()
    broker.topics.add("t")
    plog = broker.topics.logs[("t", 0)]
    plog.flush = concurrent.futures.Future()

    async def scenario() -> None:
        pending = produce.handle(broker, ctx(0, V), _request(-1, ("t", 0, b"a")))
        assert isinstance(pending, asyncio.Future)
        await asyncio.sleep(0.01)
        assert not pending.done()  # not acknowledged before the fsync
        assert plog.flush is not None
        plog.flush.set_result(None)
        response = await asyncio.wait_for(pending, 5)
        assert _rows(response) == [("t", 0, ErrorCode.NONE, 0)]

    asyncio.run(scenario())
    assert plog.flushes_asked == [0]


def test_a_failed_flush_fails_every_appended_partition() -> None:
    broker = FakeBroker()
    broker.topics.add("t", 2)
    broker.topics.logs[("t", 1)].flush = done_future(OSError(5, "Input/output error"))
    response = answer(
        produce.handle,
        broker,
        ctx(0, V),
        _request(-1, ("t", 0, b"a"), ("t", 1, b"b"), ("x", 0, b"")),
    )
    rows = _rows(response)
    assert [r[3] for r in rows] == [-1, -1, -1]
    assert rows[0][2] == rows[1][2] != ErrorCode.NONE
    assert rows[2][2] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "Input/output error" in response.responses[0].partition_responses[0].error_message
