"""Topic changes run on a worker thread, yet a pipelining client still sees them in
request order; big fetches are written from the log's bytes (scatter) intact."""

from __future__ import annotations

import time
from typing import Any

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from riverbed.protocol.records import build_batch, iter_batches_with_records

Wire = Any
PRODUCE, FETCH, METADATA, CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 0, 1, 3, 19, 20, 37


def _create(name: str, partitions: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1
            )
        ],
        timeout_ms=5000,
    )


def _produce(topic: str, partition: int, records: bytes) -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=partition, records=records)
                ],
            )
        ],
    )


def _fetch(topic: str, partition: int) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=8 << 20,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=partition, fetch_offset=0, partition_max_bytes=8 << 20
                    )
                ],
            )
        ],
    )


def _partition_error(resp: Any) -> int:
    """The first partition's error code of a Produce or Fetch response."""
    first = resp.responses[0]
    parts = first.partitions if hasattr(first, "partitions") else first.partition_responses
    code: int = parts[0].error_code
    return code


def test_pipelined_create_then_produce_sees_the_topic(wire: Wire) -> None:
    batch = build_batch([(None, b"v")])
    sent = [
        (wire.send(CREATE_TOPICS, 7, _create("piped", 2)), CREATE_TOPICS, 7),
        (wire.send(PRODUCE, 9, _produce("piped", 1, batch)), PRODUCE, 9),
        (wire.send(CREATE_PARTITIONS, 3, _grow("piped", 3)), CREATE_PARTITIONS, 3),
        (wire.send(PRODUCE, 9, _produce("piped", 2, batch)), PRODUCE, 9),
        (wire.send(DELETE_TOPICS, 6, _delete("piped")), DELETE_TOPICS, 6),
        (wire.send(PRODUCE, 9, _produce("piped", 0, batch)), PRODUCE, 9),
        (wire.send(CREATE_TOPICS, 7, _create("piped", 1)), CREATE_TOPICS, 7),
        (wire.send(FETCH, 12, _fetch("piped", 0)), FETCH, 12),
    ]
    answers = []
    for cid, key, version in sent:
        got, resp = wire.recv(key, version)
        assert got == cid
        answers.append(resp)
    assert answers[0].topics[0].error_code == ErrorCode.NONE
    assert _partition_error(answers[1]) == ErrorCode.NONE
    assert answers[2].results[0].error_code == ErrorCode.NONE
    assert _partition_error(answers[3]) == ErrorCode.NONE
    assert answers[4].responses[0].error_code == ErrorCode.NONE
    assert _partition_error(answers[5]) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answers[6].topics[0].error_code == ErrorCode.NONE
    recreated = answers[7].responses[0].partitions[0]
    assert recreated.error_code == ErrorCode.NONE and recreated.high_watermark == 0


def test_metadata_auto_create_answers_at_once_then_the_topic_appears(wire: Wire) -> None:
    # As Kafka 4.x: Metadata starts the creation and answers UNKNOWN_TOPIC_OR_PARTITION
    # without waiting (it holds no barrier); a later Metadata finds the partitions.
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
        allow_auto_topic_creation=True,
    )
    meta = wire.call(METADATA, 12, request)
    assert meta.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert meta.topics[0].partitions == []
    deadline = time.monotonic() + 60
    while meta.topics[0].error_code != ErrorCode.NONE:
        assert meta.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert time.monotonic() < deadline, "the auto-created topic never appeared"
        time.sleep(0.05)
        meta = wire.call(METADATA, 12, request)
    assert len(meta.topics[0].partitions) >= 1
    produced = wire.call(PRODUCE, 9, _produce("auto", 0, build_batch([(None, b"x")])))
    assert _partition_error(produced) == ErrorCode.NONE


def test_big_fetch_round_trips_byte_for_byte(wire: Wire) -> None:
    wire.call(CREATE_TOPICS, 7, _create("big", 1))
    values = [bytes([i]) * 5000 for i in range(200)]  # ~1 MB over several batches
    for start in range(0, len(values), 50):
        batch = build_batch([(None, v) for v in values[start : start + 50]])
        assert _partition_error(wire.call(PRODUCE, 9, _produce("big", 0, batch))) == 0
    fetched = wire.call(FETCH, 12, _fetch("big", 0))
    records = bytes(fetched.responses[0].partitions[0].records)
    got_values = [r.value for _, rs in iter_batches_with_records(records) for r in rs]
    assert got_values == values


def _grow(name: str, count: int) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(
        topics=[CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count)],
        timeout_ms=5000,
        validate_only=False,
    )


def _delete(name: str) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name=name)], timeout_ms=5000
    )
