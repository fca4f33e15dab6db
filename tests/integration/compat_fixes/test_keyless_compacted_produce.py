"""librdkafka 0011 (issue 16): a produce to a compacted topic with some keyless records.

Kafka's LogValidator rejects the whole batch with INVALID_RECORD, names each keyless record
in ``record_errors`` (its relative index in the request's records, and a message) and sets
the partition's ``error_message``; nothing is appended.  The same raw Produce (v9, one
batch, keys ``k0, -, k2, -``) goes to Apache Kafka and Riverbed and the partition answers
must be equal.  What confluent-kafka makes of it (only the keyless records fail
INVALID_RECORD, the others ``_INVALID_DIFFERENT_RECORD``) is ``tests/compat/test_record_errors.py``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.protocol.messages import ListOffsetsRequest, ProduceRequest
from riverbed.protocol.record_build import build_batch
from riverbed.testing.wire import WireClient

DEADLINE_S = 60.0
PRODUCE, LIST_OFFSETS = 0, 2
NOT_LEADER_OR_FOLLOWER = 6


def _compacted_topic(bootstrap: str, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})
    admin.create_topics([new])[name].result(DEADLINE_S)
    return name


def _call(bootstrap: str, api_key: int, version: int, request: Any) -> Any:
    """``request``'s response on a connection of its own."""
    with WireClient(bootstrap, 30, client_id="keyless") as wire:
        return wire.call(api_key, version, request)


def _end_offset(bootstrap: str, topic: str) -> int:
    partition = ListOffsetsRequest.ListOffsetsPartition(
        partition_index=0, current_leader_epoch=-1, timestamp=-1
    )
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])],
    )
    response = _call(bootstrap, LIST_OFFSETS, 5, request)
    return int(response.topics[0].partitions[0].offset)


def test_raw_produce_names_the_keyless_records(server: Any) -> None:
    bootstrap = server.bootstrap_servers
    topic = _compacted_topic(bootstrap, "keyless-raw")
    batch = build_batch([(b"k0", b"v"), (None, b"v"), (b"k2", b"v"), (None, b"v")])
    request = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                topic_id=uuid.UUID(int=0),
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    deadline = time.monotonic() + DEADLINE_S
    while True:  # Kafka: the new topic's leader may not be known for a moment
        [part] = _call(bootstrap, PRODUCE, 9, request).responses[0].partition_responses
        if part.error_code != NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    message = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert (part.error_code, part.base_offset) == (KafkaError.INVALID_RECORD, -1)
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (1, message),
        (3, message),
    ]
    assert part.error_message == (
        "One or more records have been rejected due to 2 record errors in total, and only "
        "showing the first three errors at most: "
        f"[RecordError(batchIndex=1, message='{message}'), "
        f"RecordError(batchIndex=3, message='{message}')]"
    )
    assert _end_offset(bootstrap, topic) == 0  # the whole batch was refused
