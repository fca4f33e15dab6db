"""Property tests for record batches: round trips, varints, and hostile bytes."""

from __future__ import annotations

import contextlib
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from riverbed.errors import RiverbedError
from riverbed.protocol.batch import crc32c
from riverbed.protocol.records import (
    Header,
    SimpleRecord,
    build_batch,
    read_batch,
    rebuild_batch,
)
from riverbed.protocol.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    encode_varint,
    encode_varlong,
    read_varint,
    read_varlong,
)

maybe_bytes = st.none() | st.binary(max_size=64)
headers = st.lists(st.builds(Header, st.text(max_size=12), maybe_bytes), max_size=4).map(tuple)
timestamps = st.integers(min_value=0, max_value=1 << 45)
records = st.lists(
    st.builds(SimpleRecord, maybe_bytes, maybe_bytes, headers, st.none() | timestamps),
    min_size=1,
    max_size=12,
)
codecs = st.sampled_from([0, 1, 2, 3, 4])


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=records,
    codec=codecs,
    base_offset=st.integers(min_value=0, max_value=1 << 62),
    base_timestamp=timestamps,
    producer_id=st.integers(min_value=-1, max_value=INT64_MAX),
    base_sequence=st.integers(min_value=-1, max_value=INT32_MAX),
    transactional=st.booleans(),
)
def test_build_read_round_trip(
    batch: list[SimpleRecord],
    codec: int,
    base_offset: int,
    base_timestamp: int,
    producer_id: int,
    base_sequence: int,
    transactional: bool,
) -> None:
    buf = build_batch(
        batch,
        base_offset=base_offset,
        compression=codec,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=base_sequence,
        is_transactional=transactional,
        base_timestamp=base_timestamp,
    )
    header, got = read_batch(buf)
    assert header.size == len(buf)
    assert (header.compression, header.is_transactional) == (codec, transactional)
    assert (header.base_offset, header.records_count) == (base_offset, len(batch))
    assert (header.producer_id, header.base_sequence) == (producer_id, base_sequence)
    for i, (want, record) in enumerate(zip(batch, got, strict=True)):
        assert record.offset == base_offset + i
        assert record.timestamp == (base_timestamp if want.timestamp is None else want.timestamp)
        assert (record.key, record.value, record.headers) == (want.key, want.value, want.headers)
    assert header.max_timestamp == max(r.timestamp for r in got)
    if header.base_timestamp == got[0].timestamp:  # else compaction moves baseTimestamp
        assert rebuild_batch(header, got) == buf


@settings(max_examples=100)
@given(batch=records, codec=codecs, keep=st.lists(st.booleans(), min_size=12, max_size=12))
def test_rebuild_keeps_kept_records_and_batch_bounds(
    batch: list[SimpleRecord], codec: int, keep: list[bool]
) -> None:
    header, got = read_batch(
        build_batch(
            batch,
            base_offset=10,
            compression=codec,
            producer_id=1,
            producer_epoch=0,
            base_sequence=0,
        )
    )
    kept = [r for r, k in zip(got, keep, strict=False) if k]
    new_header, new_records = read_batch(rebuild_batch(header, kept))
    assert new_records == kept
    assert (new_header.base_offset, new_header.last_offset) == (
        header.base_offset,
        header.last_offset,
    )


@given(st.integers(min_value=INT32_MIN, max_value=INT32_MAX), st.binary(max_size=4))
def test_varint_round_trip(value: int, tail: bytes) -> None:
    encoded = encode_varint(value)
    assert read_varint(encoded + tail, 0) == (value, len(encoded))


@given(st.integers(min_value=INT64_MIN, max_value=INT64_MAX), st.binary(max_size=4))
def test_varlong_round_trip(value: int, tail: bytes) -> None:
    encoded = encode_varlong(value)
    assert read_varlong(encoded + tail, 0) == (value, len(encoded))


@given(st.binary(max_size=12))
def test_varint_reader_raises_only_riverbed_errors(data: bytes) -> None:
    try:
        read_varlong(data, 0)
        read_varint(data, 0)
    except RiverbedError:
        pass


@settings(max_examples=300)
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_riverbed_errors(data: bytes) -> None:
    with contextlib.suppress(RiverbedError):
        read_batch(data)


def _with_valid_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c(buf[21:]))
    return bytes(buf)


@settings(max_examples=300)
@given(
    batch=records,
    codec=codecs,
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=4),
)
def test_mutated_batches_with_valid_crc_raise_only_riverbed_errors(
    batch: list[SimpleRecord], codec: int, flips: list[tuple[int, int]]
) -> None:
    # Re-signing after mutation gets past the CRC, so the record decoder itself is probed.
    buf = bytearray(build_batch(batch, compression=codec, base_timestamp=0))
    for position, mask in flips:
        buf[21 + position % (len(buf) - 21)] ^= mask
    with contextlib.suppress(RiverbedError):
        read_batch(_with_valid_crc(buf), max_decompressed_bytes=1 << 20)
