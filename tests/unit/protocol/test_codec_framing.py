"""Framing: headers, size prefix, the ApiVersions v0 response-header rule, API registry."""

from __future__ import annotations

import struct

import pytest

from riverbed.errors import DecodeError, UnsupportedVersionError
from riverbed.protocol.api import API_BY_KEY, API_BY_NAME
from riverbed.protocol.framing import (
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from riverbed.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    MetadataRequest,
    ProduceRequest,
)

WANTED = {
    "ApiVersions": (0, 4), "Metadata": (0, 12), "Produce": (0, 11), "Fetch": (4, 16),
    "ListOffsets": (0, 8), "FindCoordinator": (0, 6), "JoinGroup": (0, 9), "SyncGroup": (0, 5),
    "Heartbeat": (0, 4), "LeaveGroup": (0, 5), "OffsetCommit": (0, 9), "OffsetFetch": (0, 9),
    "CreateTopics": (0, 7), "DeleteTopics": (0, 6), "DescribeConfigs": (0, 4),
    "InitProducerId": (0, 5),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WANTED))
def test_codec_speaks_the_wanted_ranges(name: str) -> None:
    spec = API_BY_NAME[name]
    low, high = WANTED[name]
    assert spec.min_version <= low and high <= spec.max_version


def test_other_wanted_apis_exist() -> None:
    for name in (
        "ListGroups", "DescribeGroups", "DeleteGroups", "OffsetDelete", "CreatePartitions",
        "DeleteRecords", "AlterConfigs", "IncrementalAlterConfigs", "DescribeCluster",
        "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit",
        "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "SaslHandshake", "SaslAuthenticate",
    ):  # fmt: skip
        assert name in API_BY_NAME


def test_header_versions() -> None:
    produce, api_versions = API_BY_NAME["Produce"], API_BY_NAME["ApiVersions"]
    assert produce.request_header_version(8) == 1 and produce.response_header_version(8) == 0
    assert produce.request_header_version(9) == 2 and produce.response_header_version(9) == 1
    assert api_versions.request_header_version(3) == 2
    assert api_versions.response_header_version(3) == 0  # always v0, even when flexible


def test_produce_v0_to_2_have_no_transactional_id() -> None:
    req = ProduceRequest(transactional_id="tx", acks=-1, timeout_ms=5)
    v2, v3 = req.encode(2), req.encode(3)
    assert v2 == struct.pack(">hii", -1, 5, 0)
    assert v3 == struct.pack(">h2shii", 2, b"tx", -1, 5, 0)
    assert ProduceRequest.decode(v2, 2).transactional_id is None


def test_request_round_trip_flexible_header() -> None:
    header = RequestHeader(api_key=3, api_version=12, correlation_id=77, client_id="cli")
    frame = encode_request(header, MetadataRequest(topics=None))
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    # header v2: key, version, correlation id, int16 client id, empty tagged fields
    assert frame[4:18] == struct.pack(">hhih3sB", 3, 12, 77, 3, b"cli", 0)
    got_header, request = decode_request(frame[4:])
    assert got_header == header
    assert isinstance(request, MetadataRequest) and request.topics is None


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    header = RequestHeader(api_key=18, api_version=4, correlation_id=9, client_id=None)
    body = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=0)])
    frame = encode_response(header, body)
    assert frame[4:8] == struct.pack(">i", 9)
    assert frame[8:] == body.encode(4)  # no tagged-field byte between header and body
    correlation_id, decoded = decode_response(frame[4:], 18, 4)
    assert correlation_id == 9 and decoded == body


def test_flexible_response_has_header_tagged_fields() -> None:
    header = RequestHeader(api_key=1, api_version=12, correlation_id=5, client_id="c")
    body = FetchResponse(throttle_time_ms=1)
    frame = encode_response(header, body)
    assert frame[4:9] == struct.pack(">iB", 5, 0)
    assert decode_response(frame[4:], 1, 12) == (5, body)


def test_unsupported_version_carries_header() -> None:
    frame = struct.pack(">hhih4s", 18, 99, 1234, 4, b"kpy3") + b"\x00" * 8
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(frame)
    assert info.value.header == RequestHeader(18, 99, 1234, "kpy3")  # type: ignore[attr-defined]


def test_unknown_api_key_carries_header() -> None:
    frame = struct.pack(">hhih", 999, 0, 1, -1)
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(frame)
    assert info.value.header.api_key == 999  # type: ignore[attr-defined]


def test_api_versions_v3_request_from_a_client() -> None:
    req = ApiVersionsRequest(client_software_name="riverbed", client_software_version="1.0")
    frame = encode_request(RequestHeader(18, 3, 1, "x"), req)
    header, decoded = decode_request(memoryview(frame)[4:])
    assert header.api_version == 3 and decoded == req


def test_trailing_bytes_are_refused() -> None:
    frame = encode_request(RequestHeader(18, 0, 1, "x"), ApiVersionsRequest())
    with pytest.raises(DecodeError):
        decode_request(frame[4:] + b"\x00")


def test_trailing_bytes_are_ignored_when_asked_as_by_the_broker() -> None:
    """librdkafka 2.16 sends Metadata v13 with three extra bytes; Kafka ignores them."""
    from riverbed.broker.request_decoding import decode_request as broker_decode_request

    req = ApiVersionsRequest(client_software_name="rdkafka", client_software_version="2")
    frame = memoryview(encode_request(RequestHeader(18, 3, 7, "x"), req)[4:] + b"\x00\x01\x02")
    header, decoded = decode_request(frame, ignore_trailing_bytes=True)
    assert header == RequestHeader(18, 3, 7, "x") and decoded == req
    assert broker_decode_request(frame) == (header, decoded)
    with pytest.raises(DecodeError):  # a truncated body is still an error
        decode_request(frame[:-6], ignore_trailing_bytes=True)


def test_registry_pairs_requests_with_responses() -> None:
    for key, spec in API_BY_KEY.items():
        assert spec.request_class.API_KEY == key == spec.response_class.API_KEY
        assert spec.request_class.MESSAGE_TYPE == "request"
        assert spec.response_class.MESSAGE_TYPE == "response"


def test_served_ranges_stop_before_the_versions_kafka_4_4_added() -> None:
    """The codec speaks Kafka 4.4's versions; the broker advertises only those its handlers
    implement (a client could otherwise pick e.g. ApiVersions v5 and expect KIP-1242)."""
    from riverbed.protocol.api import SERVED_MAX_VERSIONS

    for name, served in SERVED_MAX_VERSIONS.items():
        spec = API_BY_NAME[name]
        assert spec.max_version == served < spec.codec_max_version
    assert API_BY_NAME["ApiVersions"].max_version == 4
    assert API_BY_NAME["Produce"].max_version == API_BY_NAME["Produce"].codec_max_version
