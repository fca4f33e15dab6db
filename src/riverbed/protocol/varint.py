"""Zig-zag variable-length integers, as used inside magic v2 records.

Format (Protobuf's ``sint32``/``sint64``): the signed value ``n`` is first zig-zag mapped to
an unsigned one, ``(n << 1) ^ (n >> 63)``, so that small magnitudes of either sign stay
small (0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3, ...); the unsigned value is then written seven bits
at a time, least significant group first, with the high bit of each byte set when more
bytes follow.  Kafka's ``varint`` is at most 5 bytes (int32 range), ``varlong`` at most 10
bytes (int64 range).

Decoding never reads past ``len(buf)`` and refuses over-long encodings and values out of
range with :class:`~riverbed.errors.CorruptRecordError`: these functions read record
bytes, so a bad varint means a corrupt record.  Pure functions, thread-safe.

The record codec in :mod:`riverbed.protocol.records` inlines the one-byte fast path of
:func:`read_varint` and calls into this module only for longer encodings.
"""

from __future__ import annotations

from riverbed.errors import CorruptRecordError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10

_TABLE_SIZE = 1 << 14
_ENCODED: list[bytes] = []


def zigzag_encode(value: int) -> int:
    """Map a signed int64 to its zig-zag unsigned form."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode`."""
    return (value >> 1) ^ -(value & 1)


def _encode_unsigned(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_ENCODED.extend(_encode_unsigned(u) for u in range(_TABLE_SIZE))


def encode_varint(value: int) -> bytes:
    """Zig-zag varint (int32) bytes of ``value``; ValueError outside int32."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint out of int32 range: {value}")
    unsigned = (value << 1) ^ (value >> 63)
    if unsigned < _TABLE_SIZE:
        return _ENCODED[unsigned]
    return _encode_unsigned(unsigned)


def encode_varlong(value: int) -> bytes:
    """Zig-zag varlong (int64) bytes of ``value``; ValueError outside int64."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong out of int64 range: {value}")
    unsigned = (value << 1) ^ (value >> 63)
    if unsigned < _TABLE_SIZE:
        return _ENCODED[unsigned]
    return _encode_unsigned(unsigned)


def zigzag_bytes(value: int) -> bytes:
    """Zig-zag varint bytes of ``value`` without a range check (hot-path encoders that
    bound their inputs themselves)."""
    unsigned = (value << 1) ^ (value >> 63)
    if unsigned < _TABLE_SIZE:
        return _ENCODED[unsigned]
    return _encode_unsigned(unsigned)


def varint_size(value: int) -> int:
    """Number of bytes :func:`encode_varlong` writes for ``value``."""
    unsigned = (value << 1) ^ (value >> 63)
    size = 1
    while unsigned > 0x7F:
        unsigned >>= 7
        size += 1
    return size


def read_unsigned(
    buf: bytes | bytearray | memoryview, pos: int, max_bytes: int, bits: int
) -> tuple[int, int]:
    """Decode the unsigned (still zig-zag mapped) value of at most ``max_bytes`` bytes
    and ``bits`` bits at ``buf[pos]``; returns ``(unsigned, next_pos)``."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise CorruptRecordError("varint truncated")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            if result >> bits:
                raise CorruptRecordError(f"varint overflows int{bits}")
            return result, pos
        shift += 7
    raise CorruptRecordError(f"varint longer than {max_bytes} bytes")


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint (int32) at ``buf[pos]``; returns ``(value, next_pos)``."""
    if pos < len(buf):
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
    unsigned, pos = read_unsigned(buf, pos, VARINT_MAX_BYTES, 32)
    return (unsigned >> 1) ^ -(unsigned & 1), pos


def read_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varlong (int64) at ``buf[pos]``; returns ``(value, next_pos)``."""
    if pos < len(buf):
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
    unsigned, pos = read_unsigned(buf, pos, VARLONG_MAX_BYTES, 64)
    return (unsigned >> 1) ^ -(unsigned & 1), pos
