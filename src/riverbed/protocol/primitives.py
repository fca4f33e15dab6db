"""Kafka wire primitives: read from a ``memoryview``, append to a ``bytearray``.

The generated message codecs (:mod:`riverbed.protocol.messages.generated`) inline the
fixed-width fields (``int8`` … ``int64``, ``uint16``, ``uint32``, ``float64``, ``bool``)
with precompiled :class:`struct.Struct` objects and call the helpers here for everything
of variable length.  Formats (all big-endian, see Kafka's ``protocol.html``)::

    STRING                  int16 length N, then N bytes of UTF-8   (N = -1: null)
    COMPACT_STRING          uvarint N+1, then N bytes               (0: null)
    BYTES                   int32 length N, then N bytes            (N = -1: null)
    COMPACT_BYTES           uvarint N+1, then N bytes               (0: null)
    ARRAY                   int32 count N, then N elements          (N = -1: null)
    COMPACT_ARRAY           uvarint N+1, then N elements            (0: null)
    UUID                    16 raw bytes
    UNSIGNED_VARINT         7 bits per byte, low groups first, high bit = "more"
    TAGGED_FIELDS           uvarint count, then per field: uvarint tag, uvarint size, data

Readers take ``(buf, pos)`` and return ``(value, new_pos)``.  Every reader checks a
claimed length or element count against the bytes that remain *before* it slices or
allocates (the lesson of CVE-2022-34917), and raises :class:`~riverbed.errors.DecodeError`
on anything malformed.  Readers may also let :class:`struct.error` or
:class:`IndexError` escape on a truncated buffer; the message entry points
(:meth:`riverbed.protocol.messages.base.Message.decode`) turn those into ``DecodeError``
too, so callers only ever see ``DecodeError``.

Pure functions, no state: safe from any thread.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence

from riverbed.errors import DecodeError

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
ZERO_UUID = uuid.UUID(int=0)

_NULL_INT16 = b"\xff\xff"
_NULL_INT32 = b"\xff\xff\xff\xff"
_int16_unpack_from = INT16.unpack_from
_int32_unpack_from = INT32.unpack_from
_int16_pack = INT16.pack
_int32_pack = INT32.pack
_UUID = uuid.UUID

# ---------------------------------------------------------------------------- varints


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (32 bits), as Kafka's ``readUnsignedVarint``."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (0 <= value < 2**32) as an unsigned varint."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag signed varint (32 bits)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


# ---------------------------------------------------------------------------- strings


def _take(buf: memoryview, pos: int, n: int) -> int:
    """End offset of ``n`` bytes starting at ``pos``; DecodeError if they are not there."""
    end = pos + n
    if end > len(buf):
        raise DecodeError(f"length {n} at offset {pos} runs past the end ({len(buf)} bytes)")
    return end


def read_string(buf: memoryview, pos: int) -> tuple[str, int]:
    (n,) = _int16_unpack_from(buf, pos)
    if n < 0:
        raise DecodeError("null or negative length for a non-nullable string")
    pos += 2
    end = _take(buf, pos, n)
    return str(buf[pos:end], "utf-8"), end


def read_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    (n,) = _int16_unpack_from(buf, pos)
    pos += 2
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative string length {n}")
        return None, pos
    end = _take(buf, pos, n)
    return str(buf[pos:end], "utf-8"), end


def read_compact_string(buf: memoryview, pos: int) -> tuple[str, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("null compact string for a non-nullable field")
    end = _take(buf, pos, n - 1)
    return str(buf[pos:end], "utf-8"), end


def read_compact_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1)
    return str(buf[pos:end], "utf-8"), end


def write_string(out: bytearray, value: str) -> None:
    data = value.encode()
    out += _int16_pack(len(data))
    out += data


def write_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += _NULL_INT16
    else:
        data = value.encode()
        out += _int16_pack(len(data))
        out += data


def write_compact_string(out: bytearray, value: str) -> None:
    data = value.encode()
    write_uvarint(out, len(data) + 1)
    out += data


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
    else:
        data = value.encode()
        write_uvarint(out, len(data) + 1)
        out += data


# ---------------------------------------------------------------------------- bytes


def read_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    (n,) = _int32_unpack_from(buf, pos)
    if n < 0:
        raise DecodeError("null or negative length for non-nullable bytes")
    pos += 4
    end = _take(buf, pos, n)
    return bytes(buf[pos:end]), end


def read_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    (n,) = _int32_unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative bytes length {n}")
        return None, pos
    end = _take(buf, pos, n)
    return bytes(buf[pos:end]), end


def read_compact_bytes(buf: memoryview, pos: int) -> tuple[bytes, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("null compact bytes for a non-nullable field")
    end = _take(buf, pos, n - 1)
    return bytes(buf[pos:end]), end


def read_compact_nullable_bytes(buf: memoryview, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1)
    return bytes(buf[pos:end]), end


def read_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """A ``records`` field: a zero-copy slice of ``buf`` (never decoded here), or None."""
    (n,) = _int32_unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative records length {n}")
        return None, pos
    end = _take(buf, pos, n)
    return buf[pos:end], end


def read_compact_records(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _take(buf, pos, n - 1)
    return buf[pos:end], end


def write_bytes(out: bytearray, value: bytes | memoryview) -> None:
    out += _int32_pack(len(value))
    out += value


def write_nullable_bytes(out: bytearray, value: bytes | memoryview | None) -> None:
    if value is None:
        out += _NULL_INT32
    else:
        out += _int32_pack(len(value))
        out += value


def write_compact_bytes(out: bytearray, value: bytes | memoryview) -> None:
    write_uvarint(out, len(value) + 1)
    out += value


def write_compact_nullable_bytes(out: bytearray, value: bytes | memoryview | None) -> None:
    if value is None:
        out.append(0)
    else:
        write_uvarint(out, len(value) + 1)
        out += value


# ---------------------------------------------------------------------------- uuid


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    end = _take(buf, pos, 16)
    return _UUID(bytes=bytes(buf[pos:end])), end


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


# ---------------------------------------------------------------------------- arrays


def read_array_length(buf: memoryview, pos: int, min_element_size: int) -> tuple[int, int]:
    """An ARRAY count (-1 for null), checked against the bytes left before any allocation.

    ``min_element_size`` is the fewest bytes one element can occupy (>= 1), so a count
    that claims more elements than the frame could hold is refused up front.
    """
    (n,) = _int32_unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative array length {n}")
        return -1, pos
    if n * min_element_size > len(buf) - pos:
        raise DecodeError(f"array of {n} elements cannot fit in the {len(buf) - pos} bytes left")
    return n, pos


def read_compact_array_length(buf: memoryview, pos: int, min_element_size: int) -> tuple[int, int]:
    """A COMPACT_ARRAY count (-1 for null), checked like :func:`read_array_length`."""
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n > 0 and n * min_element_size > len(buf) - pos:
        raise DecodeError(f"array of {n} elements cannot fit in the {len(buf) - pos} bytes left")
    return n, pos


def write_array_length(out: bytearray, n: int) -> None:
    out += _int32_pack(n)


def write_compact_array_length(out: bytearray, n: int) -> None:
    write_uvarint(out, n + 1)


def read_fixed_array(
    buf: memoryview, pos: int, n: int, code: str, size: int
) -> tuple[list[int], int]:
    """``n`` fixed-width integers (struct ``code``, ``size`` bytes each) as a list."""
    end = _take(buf, pos, n * size)
    return list(struct.unpack_from(f">{n}{code}", buf, pos)), end


def write_fixed_array(out: bytearray, values: Sequence[int], code: str) -> None:
    out += struct.pack(f">{len(values)}{code}", *values)


# ---------------------------------------------------------------------------- tagged fields

TaggedFields = list[tuple[int, bytes]]
"""Raw tagged fields: (tag, payload) pairs, payload still encoded."""


def read_tag_header(buf: memoryview, pos: int) -> tuple[int, int]:
    """The number of tagged fields that follow, checked against the bytes left."""
    n, pos = read_uvarint(buf, pos)
    if n * 2 > len(buf) - pos:
        raise DecodeError(f"{n} tagged fields cannot fit in the {len(buf) - pos} bytes left")
    return n, pos


def read_tag(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """One tagged field's ``(tag, payload_start, payload_end)``."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    return tag, pos, _take(buf, pos, size)


def read_unknown_tagged_fields(buf: memoryview, pos: int) -> tuple[TaggedFields | None, int]:
    """A TAGGED_FIELDS section none of whose tags we know: kept raw to be re-encoded."""
    n, pos = read_tag_header(buf, pos)
    if n == 0:
        return None, pos
    fields: TaggedFields = []
    for _ in range(n):
        tag, start, pos = read_tag(buf, pos)
        fields.append((tag, bytes(buf[start:pos])))
    return fields, pos


def write_tagged_fields(out: bytearray, known: TaggedFields, unknown: TaggedFields | None) -> None:
    """Write known and unknown tagged fields together, in ascending tag order."""
    fields = known + unknown if unknown else known
    if not fields:
        out.append(0)
        return
    fields.sort(key=lambda f: f[0])
    write_uvarint(out, len(fields))
    for tag, payload in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(payload))
        out += payload
