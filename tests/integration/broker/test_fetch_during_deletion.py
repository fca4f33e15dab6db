"""A fetch racing a topic's deletion and re-creation never answers KAFKA_STORAGE_ERROR.

kafka-go's ``TestReader/topic_being_recreated_will_return_an_error`` keeps a reader
fetching offset 1 (``MaxBytes`` 10e6: above ``fetch.OFF_LOOP_READ_BYTES``, so the read runs
on a worker thread) while the topic is deleted and created again.  A fetch that resolved
the old partition log on the event loop and read it on the worker after the deletion had
begun got the log's LogClosedError: KAFKA_STORAGE_ERROR (56), where Kafka answers as for a
topic that is gone (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID by topic id) and, once the
topic is back and empty, OFFSET_OUT_OF_RANGE.  Here a fetcher thread keeps fetching offset
1 while the main thread deletes and re-creates the topic (by CreateTopics and by Metadata
auto-creation), for a fixed number of rounds; every answer must be one Kafka gives
(``RIVERBED_RECREATE_ROUNDS`` sets the rounds, 200 by default: before the fix it saw 56 in
about 1 run in 5 on a loaded 2-core box).  The first test makes the race certain (it failed
every time before the fix): the fetch's worker-thread read is held until DeleteTopics has
answered.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from riverbed.broker.handlers import fetch
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from riverbed.protocol.records import build_batch
from riverbed.testing.embedded import EmbeddedBroker

Wire = Any
PRODUCE, FETCH, METADATA, CREATE_TOPICS, DELETE_TOPICS = 0, 1, 3, 19, 20
TOPIC = "recreated"
PARTITIONS = 1  # as kafka-go's test (and what Metadata auto-creation makes)
FETCHERS = 2
ROUNDS = int(os.environ.get("RIVERBED_RECREATE_ROUNDS", "200"))
BIG = 10_000_000  # kafka-go's MaxBytes in the test: the fetch reads off the event loop
DEADLINE_S = 60.0
# What Kafka answers a fetch of offset 1 while the topic comes and goes.
KAFKA_ANSWERS = {
    ErrorCode.NONE,
    ErrorCode.OFFSET_OUT_OF_RANGE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
}


def _create() -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=TOPIC, num_partitions=PARTITIONS, replication_factor=1
            )
        ],
        timeout_ms=5000,
    )


def _delete() -> DeleteTopicsRequest:
    return DeleteTopicsRequest(
        topics=[DeleteTopicsRequest.DeleteTopicState(name=TOPIC)], timeout_ms=5000
    )


def _produce() -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=TOPIC,
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=0, records=build_batch([(None, b"v")])
                    )
                ],
            )
        ],
    )


def _fetch(max_wait_ms: int, topic_id: Any = None) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=BIG,
        topics=[
            FetchRequest.FetchTopic(
                topic=TOPIC,
                topic_id=topic_id,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=p, fetch_offset=1, partition_max_bytes=BIG
                    )
                    for p in range(PARTITIONS)
                ],
            )
        ],
    )


def _fetch_codes(wire: Wire, max_wait_ms: int = 0) -> list[int]:
    response = wire.call(FETCH, 11, _fetch(max_wait_ms))
    return [p.error_code for t in response.responses for p in t.partitions]


def _auto_create(wire: Wire) -> None:
    """Metadata with auto-creation until the topic is there (it answers
    UNKNOWN_TOPIC_OR_PARTITION while the creation runs in the background)."""
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
        allow_auto_topic_creation=True,
    )
    deadline = time.monotonic() + DEADLINE_S
    while wire.call(METADATA, 12, request).topics[0].error_code != ErrorCode.NONE:
        assert time.monotonic() < deadline, "the auto-created topic never appeared"
        time.sleep(0.005)


def _on_a_worker_thread() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


@pytest.mark.parametrize(
    ("version", "expected"),
    [(11, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (13, ErrorCode.UNKNOWN_TOPIC_ID)],
)
def test_a_fetch_read_held_across_the_deletion_answers_unknown(
    broker: EmbeddedBroker,
    connect: Callable[[str], Wire],
    monkeypatch: pytest.MonkeyPatch,
    version: int,
    expected: int,
) -> None:
    admin = connect(broker.bootstrap_servers)
    fetcher = connect(broker.bootstrap_servers)
    created = admin.call(CREATE_TOPICS, 7, _create())
    assert created.topics[0].error_code == ErrorCode.NONE
    topic_id = created.topics[0].topic_id
    assert admin.call(PRODUCE, 9, _produce()).responses[0].partition_responses[0].error_code == 0

    reading, deleted = threading.Event(), threading.Event()
    read_all = fetch._read_all

    def held_read_all(*args: Any) -> Any:
        # the first read off the event loop waits, its logs resolved, until DeleteTopics
        # has answered (every partition's log has begun its deletion by then)
        if _on_a_worker_thread() and not reading.is_set():
            reading.set()
            assert deleted.wait(DEADLINE_S), "DeleteTopics never answered"
        return read_all(*args)

    monkeypatch.setattr(fetch, "_read_all", held_read_all)
    sent = fetcher.send(FETCH, version, _fetch(0, topic_id if version >= 13 else None))
    assert reading.wait(DEADLINE_S), "the fetch never read off the event loop"
    assert admin.call(DELETE_TOPICS, 6, _delete()).responses[0].error_code == 0
    deleted.set()
    got, response = fetcher.recv(FETCH, version)
    assert got == sent
    codes = [p.error_code for t in response.responses for p in t.partitions]
    assert codes == [expected] * PARTITIONS  # was KAFKA_STORAGE_ERROR (56)
    # re-created and empty: offset 1 is past its end
    assert admin.call(CREATE_TOPICS, 7, _create()).topics[0].error_code == ErrorCode.NONE
    assert set(_fetch_codes(fetcher)) == {ErrorCode.OFFSET_OUT_OF_RANGE}


def _keep_fetching(wire: Wire, stop: threading.Event, seen: Counter[int]) -> None:
    while not stop.is_set():
        seen.update(_fetch_codes(wire, max_wait_ms=0))
        seen.update(_fetch_codes(wire, max_wait_ms=5))  # long-polls on the purgatory


def test_a_fetch_racing_delete_and_recreate_answers_as_kafka(
    broker: EmbeddedBroker, connect: Callable[[str], Wire]
) -> None:
    admin = connect(broker.bootstrap_servers)
    fetchers = [connect(broker.bootstrap_servers) for _ in range(FETCHERS)]
    stop = threading.Event()
    counts: list[Counter[int]] = [Counter() for _ in fetchers]  # one per thread
    threads = [
        threading.Thread(target=_keep_fetching, args=(w, stop, c), daemon=True)
        for w, c in zip(fetchers, counts, strict=True)
    ]
    for thread in threads:
        thread.start()
    try:
        for round_ in range(ROUNDS):
            if round_ % 2:
                assert admin.call(CREATE_TOPICS, 7, _create()).topics[0].error_code == 0
            else:
                _auto_create(admin)
            produced = admin.call(PRODUCE, 9, _produce())
            assert produced.responses[0].partition_responses[0].error_code == 0
            assert admin.call(DELETE_TOPICS, 6, _delete()).responses[0].error_code == 0
    finally:
        stop.set()
        for thread in threads:
            thread.join(DEADLINE_S)
    seen = sum(counts, Counter())
    assert set(seen) <= KAFKA_ANSWERS, f"fetch answers seen: {dict(seen)}"
    # re-created and empty: offset 1 is past its end
    assert admin.call(CREATE_TOPICS, 7, _create()).topics[0].error_code == 0
    assert set(_fetch_codes(admin)) == {ErrorCode.OFFSET_OUT_OF_RANGE}
