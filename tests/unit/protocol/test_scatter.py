"""Scatter encoding: the parts of a response concatenate to the plain encoding, and big
record payloads are the very objects the response held (not copies)."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from riverbed.protocol.framing import RequestHeader, encode_response, encode_response_parts
from riverbed.protocol.messages import FetchResponse, ProduceRequest
from riverbed.protocol.scatter import SPLICE_MIN_BYTES, ScatterBuffer, write_records

FETCH = 1

payloads = st.one_of(
    st.none(),
    st.binary(max_size=64),
    st.integers(SPLICE_MIN_BYTES - 2, SPLICE_MIN_BYTES + 3000).map(lambda n: bytes([n % 251]) * n),
)


def fetch_response(records: list[list[bytes | None]]) -> FetchResponse:
    return FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic=f"t{i}",
                partitions=[
                    FetchResponse.PartitionData(
                        partition_index=p,
                        error_code=0,
                        high_watermark=10,
                        last_stable_offset=10,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=r,
                    )
                    for p, r in enumerate(parts)
                ],
            )
            for i, parts in enumerate(records)
        ],
    )


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(st.lists(payloads, min_size=1, max_size=4), min_size=1, max_size=3),
    version=st.sampled_from([4, 7, 11, 12, 13, 16]),
)
def test_parts_concatenate_to_the_plain_encoding(
    records: list[list[bytes | None]], version: int
) -> None:
    header = RequestHeader(FETCH, version, 42, "c")
    response = fetch_response(records)
    parts = encode_response_parts(header, response)
    joined = b"".join(parts)
    assert joined == encode_response(header, response)
    assert struct.unpack_from(">i", joined)[0] == len(joined) - 4
    big = [r for rs in records for r in rs if r is not None and len(r) >= SPLICE_MIN_BYTES]
    spliced = [p for p in parts if any(p is b for b in big)]
    assert len(spliced) == len(big)  # written from the response's own objects


def test_small_payloads_are_copied_and_the_buffer_is_the_only_part() -> None:
    header = RequestHeader(FETCH, 12, 1, None)
    parts = encode_response_parts(header, fetch_response([[b"x" * 100]]))
    assert len(parts) == 1 and isinstance(parts[0], ScatterBuffer)


def test_plain_bytearray_never_splices() -> None:
    out = bytearray()
    payload = b"y" * (SPLICE_MIN_BYTES * 2)
    write_records(out, payload)
    assert bytes(out) == struct.pack(">i", len(payload)) + payload


def test_requests_with_records_still_encode_whole() -> None:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"z" * 5000)],
            )
        ],
    )
    out = bytearray()
    request.encode_into(out, 9)
    assert bytes(b"z" * 5000) in out  # copied in (a plain bytearray), then tagged fields
