"""Zig-zag varints of v2 records: known encodings, boundaries, malformed input."""

from __future__ import annotations

import pytest

from riverbed.errors import CorruptRecordError
from riverbed.protocol.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    encode_varint,
    encode_varlong,
    read_varint,
    read_varlong,
    varint_size,
    zigzag_bytes,
    zigzag_decode,
    zigzag_encode,
)

KNOWN = [
    (0, b"\x00"),
    (-1, b"\x01"),
    (1, b"\x02"),
    (-2, b"\x03"),
    (63, b"\x7e"),
    (-64, b"\x7f"),
    (64, b"\x80\x01"),
    (300, b"\xd8\x04"),
    (INT32_MAX, b"\xfe\xff\xff\xff\x0f"),
    (INT32_MIN, b"\xff\xff\xff\xff\x0f"),
]


@pytest.mark.parametrize(("value", "encoded"), KNOWN)
def test_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded == zigzag_bytes(value)
    assert read_varint(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))
    assert varint_size(value) == len(encoded)


def test_varlong_extremes() -> None:
    for value in (INT64_MIN, INT64_MAX, INT32_MIN - 1, INT32_MAX + 1):
        encoded = encode_varlong(value)
        assert len(encoded) == varint_size(value) <= 10
        assert read_varlong(encoded, 0) == (value, len(encoded))
    assert len(encode_varlong(INT64_MIN)) == 10
    assert zigzag_decode(zigzag_encode(INT64_MIN)) == INT64_MIN


def test_out_of_range_values_are_refused_on_encode() -> None:
    for bad in (INT32_MAX + 1, INT32_MIN - 1):
        with pytest.raises(ValueError):
            encode_varint(bad)
    for bad in (INT64_MAX + 1, INT64_MIN - 1):
        with pytest.raises(ValueError):
            encode_varlong(bad)


def test_malformed_input_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="truncated"):
        read_varint(b"\x80\x80", 0)
    with pytest.raises(CorruptRecordError, match="truncated"):
        read_varint(b"", 0)
    with pytest.raises(CorruptRecordError, match="longer"):
        read_varint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(CorruptRecordError, match="overflows"):
        read_varint(b"\xff\xff\xff\xff\x1f", 0)  # 33 bits
    with pytest.raises(CorruptRecordError, match="overflows"):
        read_varlong(b"\xff" * 9 + b"\x03", 0)  # 65 bits
    with pytest.raises(CorruptRecordError, match="longer"):
        read_varlong(b"\x80" * 10 + b"\x00", 0)
