"""DeleteRecords and AlterConfigs do their disk work off the event loop (issue 17.2).

A failure point (:mod:`riverbed.storage.faults`, ``file.fsync``) holds the fsync of one
partition's checkpoint or the topic's ``topic.properties`` until the test releases it.  While it is
held, a Fetch of *another* topic on another connection must be answered: the loop is
free.  When these ran on the loop, the fetch waited for the release (and this test timed
out).  Then the held request completes with its effect in place.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    FetchRequest,
    ProduceRequest,
)
from riverbed.protocol.records import build_batch
from riverbed.storage import faults
from riverbed.testing.embedded import EmbeddedBroker

PRODUCE, FETCH, CREATE_TOPICS, DELETE_RECORDS, ALTER_CONFIGS = 0, 1, 19, 21, 33
TOPIC_RESOURCE = 2
DEADLINE_S = 10.0


def _setup(wire: Any) -> None:
    for name in ("slow", "busy"):
        created = wire.call(
            CREATE_TOPICS,
            7,
            CreateTopicsRequest(
                topics=[
                    CreateTopicsRequest.CreatableTopic(
                        name=name, num_partitions=1, replication_factor=1
                    )
                ],
                timeout_ms=5000,
            ),
        )
        assert created.topics[0].error_code == ErrorCode.NONE
        batch = build_batch([(None, b"a"), (None, b"b"), (None, b"c")])
        wire.call(
            PRODUCE,
            9,
            ProduceRequest(
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    ProduceRequest.TopicProduceData(
                        name=name,
                        partition_data=[
                            ProduceRequest.PartitionProduceData(index=0, records=batch)
                        ],
                    )
                ],
            ),
        )


def _fetch_busy(wire: Any) -> int:
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchRequest.FetchTopic(
                topic="busy",
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    )
    partition = wire.call(FETCH, 12, request).responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NONE
    hw: int = partition.high_watermark
    return hw


def _delete_records() -> tuple[int, int, Any]:
    request = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(
                name="slow",
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=2)
                ],
            )
        ],
        timeout_ms=5000,
    )
    return DELETE_RECORDS, 2, request


def _alter_configs() -> tuple[int, int, Any]:
    request = AlterConfigsRequest(
        resources=[
            AlterConfigsRequest.AlterConfigsResource(
                resource_type=TOPIC_RESOURCE,
                resource_name="slow",
                configs=[AlterConfigsRequest.AlterableConfig(name="retention.ms", value="123456")],
            )
        ],
        validate_only=False,
    )
    return ALTER_CONFIGS, 2, request


def _delete_records_done(response: Any, broker: EmbeddedBroker) -> None:
    partition = response.topics[0].partitions[0]
    assert (partition.error_code, partition.low_watermark) == (ErrorCode.NONE, 2)
    assert broker.broker.topics.partition_log("slow", 0).log_start_offset == 2


def _alter_configs_done(response: Any, broker: EmbeddedBroker) -> None:
    assert response.responses[0].error_code == ErrorCode.NONE
    assert broker.broker.topics.partition_log("slow", 0).config.retention_ms == 123456


@pytest.mark.parametrize(
    ("request_of", "held_file", "check"),
    [
        (_delete_records, f"slow-0{os.sep}partition.checkpoint", _delete_records_done),
        (_alter_configs, f"slow{os.sep}topic.properties", _alter_configs_done),  # per topic
    ],
    ids=["delete-records", "alter-configs"],
)
def test_fetch_is_answered_while_a_change_waits_on_fsync(
    broker: EmbeddedBroker,
    connect: Callable[[str], Any],
    request_of: Callable[[], tuple[int, int, Any]],
    held_file: str,
    check: Callable[[Any, EmbeddedBroker], None],
) -> None:
    admin, reader = connect(broker.bootstrap_servers), connect(broker.bootstrap_servers)
    _setup(admin)
    api_key, version, request = request_of()
    with faults.inject("file.fsync", block=True, match=lambda path: held_file in path) as fault:
        cid = admin.send(api_key, version, request)
        assert fault.wait_reached(DEADLINE_S), "the change never reached its fsync"
        assert _fetch_busy(reader) == 3  # answered while the fsync is held
        fault.release()
        got, response = admin.recv(api_key, version)
    assert got == cid
    check(response, broker)
