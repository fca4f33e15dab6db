"""ListOffsets and DeleteRecords against in-memory fakes."""

from __future__ import annotations

from typing import Any

from handler_fakes import FakeBroker, answer, ctx

from riverbed.broker.handlers import delete_records, list_offsets
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import DeleteRecordsRequest, ListOffsetsRequest


def _broker() -> FakeBroker:
    """``t-0``: offsets 0..4 with a log start of 2 after a delete; timestamps at 0 and 3."""
    broker = FakeBroker()
    broker.topics.add("t")
    plog = broker.topics.logs[("t", 0)]
    for i in range(5):
        plog.append(b"r%d" % i)
    plog.log_start_offset = 2
    plog.timestamps = {1_000: (0, 1_000), 3_000: (3, 3_000)}
    broker.topics.add("__consumer_offsets")
    return broker


def _list(broker: FakeBroker, *wanted: tuple[str, int, int]) -> list[tuple[Any, ...]]:
    request = ListOffsetsRequest(
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=name,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=ts)
                ],
            )
            for name, p, ts in wanted
        ]
    )
    response = answer(list_offsets.handle, broker, ctx(list_offsets.API_KEY, 7), request)
    return [(p.error_code, p.offset, p.timestamp) for t in response.topics for p in t.partitions]


def test_special_timestamps() -> None:
    broker = _broker()
    assert _list(
        broker,
        ("t", 0, list_offsets.EARLIEST),
        ("t", 0, list_offsets.EARLIEST_LOCAL),
        ("t", 0, list_offsets.LATEST),
        ("t", 0, list_offsets.MAX_TIMESTAMP),  # no segments in the fake: an empty log
        ("t", 0, -5),  # earliest pending upload: none
    ) == [
        (ErrorCode.NONE, 2, -1),
        (ErrorCode.NONE, 2, -1),
        (ErrorCode.NONE, 5, -1),
        (ErrorCode.NONE, -1, -1),
        (ErrorCode.NONE, -1, -1),
    ]


def test_by_timestamp_first_at_or_after_else_minus_one() -> None:
    broker = _broker()
    assert _list(broker, ("t", 0, 2_000), ("t", 0, 3_000), ("t", 0, 9_000)) == [
        (ErrorCode.NONE, 3, 3_000),
        (ErrorCode.NONE, 3, 3_000),
        (ErrorCode.NONE, -1, -1),
    ]


def test_unknown_partitions_fail_alone() -> None:
    assert _list(_broker(), ("t", 1, -1), ("nope", 0, -1), ("t", 0, -1)) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
        (ErrorCode.NONE, 5, -1),
    ]


def _delete(broker: FakeBroker, *wanted: tuple[str, int, int]) -> list[tuple[Any, ...]]:
    request = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(
                name=name,
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=p, offset=offset)
                ],
            )
            for name, p, offset in wanted
        ],
        timeout_ms=1000,
    )
    response = answer(delete_records.handle, broker, ctx(delete_records.API_KEY, 2), request)
    return [
        (t.name, p.partition_index, p.error_code, p.low_watermark)
        for t in response.topics
        for p in t.partitions
    ]


def test_delete_records_moves_the_log_start() -> None:
    broker = _broker()
    assert _delete(broker, ("t", 0, 4)) == [("t", 0, ErrorCode.NONE, 4)]
    assert broker.topics.logs[("t", 0)].log_start_offset == 4


def test_delete_records_minus_one_means_the_high_watermark() -> None:
    assert _delete(_broker(), ("t", 0, -1)) == [("t", 0, ErrorCode.NONE, 5)]


def test_delete_records_errors() -> None:
    broker = _broker()
    assert _delete(broker, ("t", 0, 99), ("nope", 0, 1), ("__consumer_offsets", 0, 0)) == [
        ("t", 0, ErrorCode.OFFSET_OUT_OF_RANGE, -1),
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("__consumer_offsets", 0, ErrorCode.INVALID_TOPIC_EXCEPTION, -1),
    ]
    assert broker.topics.logs[("t", 0)].log_start_offset == 2
