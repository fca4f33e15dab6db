"""The broker over the raw wire: versions, framing limits, errors, pipelining, long polls."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from riverbed.protocol.batch import CRC_START
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader, encode_request
from riverbed.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeClusterRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from riverbed.protocol.records import build_batch
from riverbed.testing.embedded import EmbeddedBroker

Wire = Any  # the conftest's wire client (handed out by fixtures)
Connect = Callable[[str], Any]

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
API_VERSIONS, CREATE_TOPICS, DELETE_RECORDS, DESCRIBE_CLUSTER = 18, 19, 21, 60


def create_topic(wire: Wire, name: str, partitions: int = 1) -> None:
    req = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1
            )
        ],
        timeout_ms=1000,
    )
    resp = wire.call(CREATE_TOPICS, 7, req)
    assert resp.topics[0].error_code == ErrorCode.NONE, resp


def produce_request(
    topic: str, records: bytes, partition: int = 0, acks: int = -1
) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
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


def fetch_request(
    topic: str, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 1, partition: int = 0
) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=1 << 20,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    )


def partition_of(resp: object) -> object:
    return resp.responses[0].partition_responses[0]  # type: ignore[attr-defined]


# -- ApiVersions ----------------------------------------------------------------------
@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_every_version(wire: Wire, version: int) -> None:
    resp = wire.call(
        API_VERSIONS,
        version,
        ApiVersionsRequest(client_software_name="t", client_software_version="1"),
    )
    assert resp.error_code == ErrorCode.NONE
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[PRODUCE][0] == 0  # advertised from v0 for librdkafka (KAFKA-18659)
    assert ranges[API_VERSIONS] == (0, 4)
    assert {FETCH, METADATA, LIST_OFFSETS, 22, 32, 33, 44, 37, 60} <= set(ranges)


def test_api_versions_unsupported_version_gets_v0_fallback(wire: Wire) -> None:
    # Hand-built: ApiVersions v9 does not exist, so no codec can encode it.
    body = struct.pack(">hhi", API_VERSIONS, 9, 77) + struct.pack(">h", 1) + b"x" + b"\x00" * 4
    wire.send_raw(struct.pack(">i", len(body)) + body)
    frame = wire.recv_frame()
    (cid,) = struct.unpack_from(">i", frame)
    assert cid == 77
    resp = ApiVersionsResponse.decode(frame[4:], 0)  # response header v0, body v0
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any(k.api_key == PRODUCE for k in resp.api_keys)


def test_produce_v2_is_refused_by_closing(wire: Wire) -> None:
    batch = build_batch([(b"k", b"v")])
    wire.send(PRODUCE, 2, produce_request("t", batch))
    assert wire.is_closed_by_peer()


def test_unknown_api_key_closes_connection(wire: Wire) -> None:
    body = struct.pack(">hhi", 999, 0, 1) + struct.pack(">h", -1)
    wire.send_raw(struct.pack(">i", len(body)) + body)
    assert wire.is_closed_by_peer()


# -- bad input --------------------------------------------------------------------------
def test_malformed_frame_closes_only_that_connection(
    broker: EmbeddedBroker, wire: Wire, connect: Connect
) -> None:
    other = connect(broker.bootstrap_servers)
    body = struct.pack(">hhi", METADATA, 12, 1) + struct.pack(">h", -1) + b"\xff\xff\xff"
    wire.send_raw(struct.pack(">i", len(body)) + body)
    assert wire.is_closed_by_peer()
    resp = other.call(METADATA, 12, MetadataRequest(topics=None))
    assert resp.brokers[0].port == broker.port


def test_oversized_frame_is_refused_before_its_body(tmp_path: object, connect: Connect) -> None:
    with EmbeddedBroker(tmp_path, {"socket.request.max.bytes": "1000"}) as b:  # type: ignore[arg-type]
        w = connect(b.bootstrap_servers)
        w.send_raw(struct.pack(">i", 1001))  # only the size prefix: the body never comes
        assert w.is_closed_by_peer()
        w2 = connect(b.bootstrap_servers)
        assert w2.call(METADATA, 12, MetadataRequest(topics=None)).cluster_id
        w.close()
        w2.close()


def test_corrupt_and_legacy_batches_get_partition_errors(wire: Wire) -> None:
    create_topic(wire, "bad")
    batch = bytearray(build_batch([(b"k", b"v")]))
    batch[CRC_START + 5] ^= 0xFF
    resp = wire.call(PRODUCE, 9, produce_request("bad", bytes(batch)))
    assert partition_of(resp).error_code == ErrorCode.CORRUPT_MESSAGE  # type: ignore[attr-defined]
    legacy = bytearray(build_batch([(b"k", b"v")]))
    legacy[16] = 1  # magic 1
    resp = wire.call(PRODUCE, 9, produce_request("bad", bytes(legacy)))
    assert (
        partition_of(resp).error_code  # type: ignore[attr-defined]
        == ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
    )
    resp = wire.call(PRODUCE, 9, produce_request("nope", build_batch([(b"k", b"v")])))
    assert partition_of(resp).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[attr-defined]
    resp = wire.call(PRODUCE, 9, produce_request("bad", build_batch([(b"k", b"v")]), acks=2))
    assert partition_of(resp).error_code == ErrorCode.INVALID_REQUIRED_ACKS  # type: ignore[attr-defined]
    # nothing was appended by any of those
    fetched = wire.call(FETCH, 12, fetch_request("bad", 0))
    assert fetched.responses[0].partitions[0].high_watermark == 0


def test_message_too_large(tmp_path: object, connect: Connect) -> None:
    with EmbeddedBroker(tmp_path, {"message.max.bytes": "200"}) as b:  # type: ignore[arg-type]
        w = connect(b.bootstrap_servers)
        create_topic(w, "big")
        resp = w.call(PRODUCE, 9, produce_request("big", build_batch([(b"k", b"v" * 500)])))
        assert partition_of(resp).error_code == ErrorCode.MESSAGE_TOO_LARGE  # type: ignore[attr-defined]
        w.close()


# -- produce / fetch --------------------------------------------------------------------
def test_pipelined_requests_answered_in_order(wire: Wire) -> None:
    create_topic(wire, "pipe")
    sent = []
    for i in range(50):
        sent.append(
            (
                wire.send(PRODUCE, 9, produce_request("pipe", build_batch([(None, b"%d" % i)]))),
                PRODUCE,
                9,
            )
        )
        sent.append((wire.send(METADATA, 12, MetadataRequest(topics=None)), METADATA, 12))
    offsets = []
    for cid, key, version in sent:
        got, resp = wire.recv(key, version)
        assert got == cid
        if key == PRODUCE:
            offsets.append(partition_of(resp).base_offset)  # type: ignore[attr-defined]
    assert offsets == list(range(50))


def test_acks_zero_sends_no_response(wire: Wire) -> None:
    create_topic(wire, "fire")
    wire.send(PRODUCE, 9, produce_request("fire", build_batch([(None, b"x")]), acks=0))
    cid = wire.send(METADATA, 12, MetadataRequest(topics=None))
    got, _ = wire.recv(METADATA, 12)
    assert got == cid  # the next frame answers the Metadata request
    fetched = wire.call(FETCH, 12, fetch_request("fire", 0))
    assert fetched.responses[0].partitions[0].high_watermark == 1


def test_long_poll_wakes_promptly_on_append(
    broker: EmbeddedBroker, wire: Wire, connect: Connect
) -> None:
    create_topic(wire, "poll")
    producer = connect(broker.bootstrap_servers)
    try:
        with ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            pending = pool.submit(
                wire.call, FETCH, 12, fetch_request("poll", 0, max_wait_ms=10_000)
            )
            deadline = time.monotonic() + 5
            while broker.broker.purgatory.waiting() == 0:  # wait for the fetch to park
                assert time.monotonic() < deadline
                time.sleep(0.001)
            appended = time.monotonic()
            producer.call(PRODUCE, 9, produce_request("poll", build_batch([(None, b"wake")])))
            resp = pending.result(timeout=5)
            woke = time.monotonic()
        part = resp.responses[0].partitions[0]
        assert part.error_code == ErrorCode.NONE and len(part.records) > 0
        assert woke - appended < 1.0  # far below max_wait_ms (10 s)
        assert woke - started < 5.0
    finally:
        producer.close()


def test_long_poll_honours_max_wait(wire: Wire) -> None:
    create_topic(wire, "idle")
    started = time.monotonic()
    resp = wire.call(FETCH, 12, fetch_request("idle", 0, max_wait_ms=200))
    elapsed = time.monotonic() - started
    assert resp.responses[0].partitions[0].records in (None, b"")
    assert 0.15 <= elapsed < 3.0


def test_fetch_out_of_range_and_list_offsets(wire: Wire) -> None:
    create_topic(wire, "lo")
    for i in range(3):
        wire.call(
            PRODUCE,
            9,
            produce_request("lo", build_batch([(None, b"%d" % i)], base_timestamp=1000 * (i + 1))),
        )
    resp = wire.call(FETCH, 12, fetch_request("lo", 99))
    assert resp.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE

    def list_offset(ts: int) -> int:
        req = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="lo",
                    partitions=[
                        ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts)
                    ],
                )
            ],
        )
        out = wire.call(LIST_OFFSETS, 9, req)
        part = out.topics[0].partitions[0]
        assert part.error_code == ErrorCode.NONE
        return int(part.offset)

    assert list_offset(-2) == 0
    assert list_offset(-1) == 3
    assert list_offset(2000) == 1
    assert list_offset(99_999) == -1
    dr = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(
                name="lo",
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=2)
                ],
            )
        ],
        timeout_ms=1000,
    )
    out = wire.call(DELETE_RECORDS, 2, dr)
    assert out.topics[0].partitions[0].low_watermark == 2
    assert list_offset(-2) == 2


def test_metadata_auto_create_and_cluster(tmp_path: object, connect: Connect) -> None:
    with EmbeddedBroker(tmp_path, {"auto.create.topics.enable": "false"}) as b:  # type: ignore[arg-type]
        w = connect(b.bootstrap_servers)
        req = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
            allow_auto_topic_creation=True,
        )
        resp = w.call(METADATA, 12, req)
        assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        cluster = w.call(DESCRIBE_CLUSTER, 1, DescribeClusterRequest())
        assert cluster.cluster_id == resp.cluster_id
        assert cluster.brokers[0].port == b.port
        w.close()
    with EmbeddedBroker(tmp_path) as b:  # type: ignore[arg-type]
        w = connect(b.bootstrap_servers)
        resp = w.call(METADATA, 12, req)  # starts the creation, answers at once (as Kafka)
        assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        deadline = time.monotonic() + 60
        while resp.topics[0].error_code != ErrorCode.NONE:
            assert time.monotonic() < deadline, "the auto-created topic never appeared"
            time.sleep(0.05)
            resp = w.call(METADATA, 12, req)
        topic = resp.topics[0]
        assert topic.error_code == ErrorCode.NONE and len(topic.partitions) == 1
        assert resp.cluster_id == cluster.cluster_id  # persisted in the data dir
        w.close()


def test_encode_request_header_roundtrip_sanity() -> None:
    # A guard on the helper the other tests build on.
    data = encode_request(RequestHeader(API_VERSIONS, 3, 5, "x"), ApiVersionsRequest())
    assert struct.unpack_from(">ihhi", data)[1:] == (API_VERSIONS, 3, 5)


def test_metadata_null_name_before_v12_is_invalid_request(wire: Wire) -> None:
    # v10-11 requests may carry a null topic name (lookup by id), but their responses
    # cannot encode one: Kafka refuses them; the connection stays usable (found by fuzzing).
    import uuid

    req = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.uuid4())],
        allow_auto_topic_creation=False,
    )
    for version in (10, 11):
        resp = wire.call(METADATA, version, req)
        assert resp.topics[0].error_code == ErrorCode.INVALID_REQUEST
    resp = wire.call(METADATA, 12, req)
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
