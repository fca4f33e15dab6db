"""Bytes, records and error codes read off requests and responses (no broker)."""

from __future__ import annotations

import threading
import uuid

from riverbed.broker.metrics_traffic import (
    count_records,
    fetch_traffic,
    produce_traffic,
    response_error,
)
from riverbed.protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from riverbed.protocol.records import build_batch
from riverbed.storage.flusher import GroupCommitFlusher
from riverbed.testing.broker_process import wait_until

TS = 1_700_000_000_000


def _batch(n: int) -> bytes:
    return build_batch([(None, b"v%d" % i, TS) for i in range(n)], base_timestamp=TS)


def _no_id(_topic_id: uuid.UUID) -> str | None:
    return None


def test_count_records_reads_batch_headers_and_skips_a_truncated_tail() -> None:
    two = _batch(3) + _batch(4)
    assert count_records(two) == 7
    assert count_records(memoryview(two)) == 7
    assert count_records(two + _batch(5)[:-1]) == 7  # a Fetch cut inside the last batch
    assert count_records(b"") == 0
    assert count_records(None) == 0


def test_response_error_finds_a_nested_partition_error() -> None:
    ok = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="t",
                partition_responses=[ProduceResponse.PartitionProduceResponse(index=0)],
            )
        ]
    )
    assert response_error(ok) == 0
    bad = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="t",
                partition_responses=[
                    ProduceResponse.PartitionProduceResponse(index=0),
                    ProduceResponse.PartitionProduceResponse(index=1, error_code=3),
                ],
            )
        ]
    )
    assert response_error(bad) == 3
    assert response_error(ApiVersionsResponse(error_code=35)) == 35
    topic = MetadataResponse.MetadataResponseTopic(name="x", error_code=3)
    assert response_error(MetadataResponse(topics=[topic])) == 3
    assert response_error(None) == 0


def test_produce_traffic_counts_only_partitions_answered_none() -> None:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=_batch(2)),
                    ProduceRequest.PartitionProduceData(index=1, records=_batch(5)),
                ],
            )
        ],
    )
    response = ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="t",
                partition_responses=[
                    ProduceResponse.PartitionProduceResponse(index=0),
                    ProduceResponse.PartitionProduceResponse(index=1, error_code=10),
                ],
            )
        ]
    )
    assert produce_traffic(request, response, _no_id) == {"t": [len(_batch(2)), 2]}
    total = len(_batch(2)) + len(_batch(5))
    assert produce_traffic(request, None, _no_id) == {"t": [total, 7]}  # acks=0


def test_fetch_traffic_resolves_topic_ids() -> None:
    topic_id = uuid.uuid4()
    response = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic="",
                topic_id=topic_id,
                partitions=[FetchResponse.PartitionData(partition_index=0, records=_batch(3))],
            )
        ]
    )
    names = {topic_id: "by-id"}
    assert fetch_traffic(response, names.get) == {"by-id": [len(_batch(3)), 3]}
    assert fetch_traffic(response, _no_id) == {}


class _Log:
    def __init__(self) -> None:
        self.flushes = 0

    def flush(self) -> int:
        self.flushes += 1
        return 0

    def flush_due(self, monotonic_ms: int) -> int | None:
        return None

    def checkpoint(self) -> None:
        pass


class _Observer:
    def __init__(self) -> None:
        self.fsyncs: list[float] = []
        self.rounds: list[tuple[int, int]] = []
        self.done = threading.Event()

    def fsync_done(self, seconds: float) -> None:
        self.fsyncs.append(seconds)

    def round_done(self, logs: int, requests: int) -> None:
        self.rounds.append((logs, requests))
        self.done.set()


def test_flusher_tells_its_observer_each_fsync_and_round() -> None:
    flusher = GroupCommitFlusher()
    observer = _Observer()
    flusher.observer = observer
    a, b = _Log(), _Log()
    # Requested before the thread starts: one round covers all three requests.
    flusher.request(a)
    flusher.request(a)
    flusher.request(b)
    flusher.start()
    try:
        assert observer.done.wait(30)
        # The round is reported when its logs are handed to the helpers, each fsync when
        # its helper's flush returns: they may come after the round.
        wait_until(lambda: len(observer.fsyncs) >= 2, 30, "both helpers' fsyncs")
    finally:
        flusher.stop()
    assert observer.rounds[0] == (2, 3)
    assert all(s >= 0 for s in observer.fsyncs)
