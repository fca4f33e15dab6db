"""Malformed input raises exactly one typed error, before allocating anything large."""

from __future__ import annotations

import contextlib
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from riverbed.errors import DecodeError, UnsupportedVersionError
from riverbed.protocol.framing import RequestHeader, decode_request, encode_request
from riverbed.protocol.messages import ALL_MESSAGES, MetadataRequest, ProduceRequest
from riverbed.protocol.messages.samples import random_message

PAIRS = [(cls, v) for cls in ALL_MESSAGES for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)]


def _produce_frame() -> bytes:
    req = ProduceRequest(
        acks=1,
        timeout_ms=100,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"x" * 40)],
            )
        ],
    )
    return encode_request(RequestHeader(0, 9, 1, "c"), req)[4:]


def test_every_truncation_of_a_request_is_a_decode_error() -> None:
    frame = _produce_frame()
    for cut in range(len(frame)):
        with pytest.raises(DecodeError):
            decode_request(frame[:cut])


def test_every_truncation_of_every_message_is_a_decode_error() -> None:
    for cls, version in PAIRS:
        data = random_message(cls, version, seed=1).encode(version)
        for cut in range(0, len(data), max(1, len(data) // 16)):
            with pytest.raises(DecodeError):
                cls.decode(data[:cut], version)


def test_unknown_versions_raise_unsupported_version() -> None:
    with pytest.raises(UnsupportedVersionError):
        ProduceRequest.decode(b"", 99)
    with pytest.raises(UnsupportedVersionError):
        ProduceRequest().encode(-1)


@pytest.mark.parametrize(
    "body",
    [
        struct.pack(">hii", 1, 100, 2_000_000_000),  # topic array claims 2e9 entries
        struct.pack(">hii", 1, 100, -5),  # negative array length
        struct.pack(">hiih", 1, 100, 1, 30_000),  # topic name claims 30000 bytes
        struct.pack(">hiih1sii", 1, 100, 1, 1, b"t", 1, 0) + struct.pack(">i", 2**31 - 1),
        struct.pack(">hiih1sii", 1, 100, 1, 1, b"t", 1, 0) + struct.pack(">i", -7),
    ],
)
def test_oversized_or_negative_lengths_fail_before_allocating(body: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            ProduceRequest.decode(body, 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_compact_array_claiming_too_much_fails_before_allocating() -> None:
    # Metadata v12: compact array of topics with count 2**28 (uvarint, 5 bytes)
    body = b"\x80\x80\x80\x80\x01"
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError):
            MetadataRequest.decode(body, 12)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_overlong_varint_is_refused() -> None:
    with pytest.raises(DecodeError):
        MetadataRequest.decode(b"\xff\xff\xff\xff\xff\xff\x01", 12)


def test_bad_utf8_is_a_decode_error() -> None:
    with pytest.raises(DecodeError):
        ProduceRequest.decode(struct.pack(">hiih2si", 1, 100, 1, 2, b"\xff\xfe", 0), 2)


def test_short_frames() -> None:
    for frame in (b"", b"\x00", b"\x00\x12\x00\x00\x00\x00\x00"):
        with pytest.raises(DecodeError):
            decode_request(frame)
    with pytest.raises(DecodeError):  # client_id longer than the frame
        decode_request(struct.pack(">hhih", 18, 0, 1, 500))


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(index=st.integers(0, len(PAIRS) - 1), data=st.binary(max_size=64))
def test_fuzzed_bytes_raise_only_decode_error(index: int, data: bytes) -> None:
    cls, version = PAIRS[index]
    with contextlib.suppress(DecodeError):
        cls.decode(data, version)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(index=st.integers(0, len(PAIRS) - 1), seed=st.integers(0, 50), flips=st.data())
def test_mutated_messages_raise_only_decode_error(
    index: int, seed: int, flips: st.DataObject
) -> None:
    cls, version = PAIRS[index]
    data = bytearray(random_message(cls, version, seed).encode(version))
    if data:
        for _ in range(flips.draw(st.integers(1, 4))):
            pos = flips.draw(st.integers(0, len(data) - 1))
            data[pos] = flips.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        cls.decode(bytes(data), version)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=48))
def test_fuzzed_frames_raise_only_typed_errors(frame: bytes) -> None:
    with contextlib.suppress(DecodeError, UnsupportedVersionError):
        decode_request(frame)
