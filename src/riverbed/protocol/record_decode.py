"""Decode the records of magic v2 record batches (Kafka's ``DefaultRecordBatch`` iterator).

:mod:`riverbed.protocol.batch` validates a batch's fixed 61-byte header without looking at
its records; :func:`read_batch` does that and then decodes the records section that
follows (decompressed as a whole first when the batch's codec is not none), each record
in the layout drawn in :mod:`riverbed.protocol.record_format`.

Invariants checked on read (violations raise :class:`~riverbed.errors.CorruptRecordError`,
or another :class:`~riverbed.errors.RiverbedError` subclass, never anything else): the
header's magic, length and CRC-32C; exactly ``recordsCount`` records that each end where
their ``length`` says and together end where the batch does; no negative lengths but -1
for null key/value/header value; the decompressed size below ``max_decompressed_bytes``.
Header keys are decoded as UTF-8 with ``surrogateescape``.  In a LogAppendTime batch
every record's timestamp is the batch's ``maxTimestamp`` (Kafka's rule).

This is a hot path: the record loop is written out by hand (see :func:`_decode_records`).
All functions are pure (bytes in, values out) and thread-safe; the iterators hold no
state beyond their position in the caller's buffer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from riverbed.errors import CorruptRecordError
from riverbed.protocol import batch as _batch
from riverbed.protocol.batch import ATTR_TIMESTAMP_TYPE, HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from riverbed.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, decompress
from riverbed.protocol.record_format import Header, Record
from riverbed.protocol.varint import read_unsigned, read_varint

__all__ = ["iter_batches_with_records", "iter_records", "read_batch"]


def _slot_setter(cls: type[Any], name: str) -> Callable[[Any, object], None]:
    setter: Callable[[Any, object], None] = vars(cls)[name].__set__
    return setter


_new_object = object.__new__
_set_offset = _slot_setter(Record, "offset")
_set_timestamp = _slot_setter(Record, "timestamp")
_set_key = _slot_setter(Record, "key")
_set_value = _slot_setter(Record, "value")
_set_headers = _slot_setter(Record, "headers")
_set_attributes = _slot_setter(Record, "attributes")
_set_header_key = _slot_setter(Header, "key")
_set_header_value = _slot_setter(Header, "value")


def _decode_records(
    data: bytes, count: int, base_offset: int, base_timestamp: int, fixed_timestamp: int | None
) -> list[Record]:
    """Decode ``count`` records filling ``data`` exactly (layout:
    :mod:`~riverbed.protocol.record_format`).

    Hot loop, written out by hand: varints of one or two bytes (every length below 8 KiB,
    offset deltas below 8192, timestamp deltas within +-8 s) are decoded inline, longer
    ones by :func:`~riverbed.protocol.varint.read_unsigned`.  Records and headers are
    filled through their slot descriptors, which skips the frozen dataclass's per-field
    ``object.__setattr__`` calls (half the cost of building one).
    """
    records: list[Record] = []
    append = records.append
    new = _new_object
    pos = 0
    end = len(data)
    try:
        for _ in range(count):
            u = data[pos]
            if u < 0x80:
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (u & 0x7F) | (data[pos + 1] << 7)
                pos += 2
            else:
                u, pos = read_unsigned(data, pos, 5, 32)
            length = (u >> 1) ^ -(u & 1)
            record_end = pos + length
            if length < 1 or record_end > end:
                raise CorruptRecordError(f"record length {length} out of bounds")
            attributes = data[pos]
            u = data[pos + 1]
            if u < 0x80:
                pos += 2
            elif data[pos + 2] < 0x80:
                u = (u & 0x7F) | (data[pos + 2] << 7)
                pos += 3
            else:
                u, pos = read_unsigned(data, pos + 1, 10, 64)
            timestamp_delta = (u >> 1) ^ -(u & 1)
            u = data[pos]
            if u < 0x80:
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (u & 0x7F) | (data[pos + 1] << 7)
                pos += 2
            else:
                u, pos = read_unsigned(data, pos, 5, 32)
            offset_delta = (u >> 1) ^ -(u & 1)
            u = data[pos]
            if u < 0x80:
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (u & 0x7F) | (data[pos + 1] << 7)
                pos += 2
            else:
                u, pos = read_unsigned(data, pos, 5, 32)
            if u == 1:
                key: bytes | None = None
            elif u & 1:
                raise CorruptRecordError(f"negative key length {(u >> 1) ^ -1}")
            else:
                key = data[pos : pos + (u >> 1)]
                pos += u >> 1
            u = data[pos]
            if u < 0x80:
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (u & 0x7F) | (data[pos + 1] << 7)
                pos += 2
            else:
                u, pos = read_unsigned(data, pos, 5, 32)
            if u == 1:
                value: bytes | None = None
            elif u & 1:
                raise CorruptRecordError(f"negative value length {(u >> 1) ^ -1}")
            else:
                value = data[pos : pos + (u >> 1)]
                pos += u >> 1
            if data[pos] == 0:
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, record_end)
            if pos != record_end:
                raise CorruptRecordError(
                    f"record length {length} does not match its fields ({pos - record_end:+d})"
                )
            record = new(Record)
            _set_offset(record, base_offset + offset_delta)
            _set_timestamp(
                record,
                base_timestamp + timestamp_delta if fixed_timestamp is None else fixed_timestamp,
            )
            _set_key(record, key)
            _set_value(record, value)
            _set_headers(record, headers)
            _set_attributes(record, attributes)
            append(record)
    except IndexError:
        raise CorruptRecordError("record truncated") from None
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes left after the batch's {count} records")
    return records


def _decode_headers(data: bytes, pos: int, record_end: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_varint(data, pos)
    if count < 0 or count > (record_end - pos) // 2:
        raise CorruptRecordError(f"header count {count} out of bounds")
    headers = []
    new = _new_object
    for _ in range(count):
        u = data[pos]
        if u < 0x80:
            pos += 1
        else:
            u, pos = read_unsigned(data, pos, 5, 32)
        if u & 1 or pos + (u >> 1) > record_end:
            raise CorruptRecordError(f"header key length {(u >> 1) ^ -(u & 1)} out of bounds")
        hkey = data[pos : pos + (u >> 1)].decode("utf-8", "surrogateescape")
        pos += u >> 1
        u = data[pos]
        if u < 0x80:
            pos += 1
        else:
            u, pos = read_unsigned(data, pos, 5, 32)
        if u == 1:
            hvalue: bytes | None = None
        elif u & 1:
            raise CorruptRecordError(f"negative header value length {(u >> 1) ^ -1}")
        else:
            hvalue = data[pos : pos + (u >> 1)]
            pos += u >> 1
        header = new(Header)
        _set_header_key(header, hkey)
        _set_header_value(header, hvalue)
        headers.append(header)
    return tuple(headers), pos


def read_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> tuple[BatchHeader, list[Record]]:
    """Validate and decode the whole batch at ``buf[pos:]`` (header, CRC, records).

    Raises LegacyMessageFormatError for magic 0/1, UnsupportedCompressionError for an
    unknown codec id and CorruptRecordError for anything malformed.
    """
    header = _batch.validate_batch(buf, pos)
    section = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
    codec = header.compression
    data = decompress(codec, section, max_size=max_decompressed_bytes) if codec else bytes(section)
    fixed = header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE else None
    records = _decode_records(
        data, header.records_count, header.base_offset, header.base_timestamp, fixed
    )
    return header, records


def iter_batches_with_records(
    buf: bytes | bytearray | memoryview,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    allow_partial_tail: bool = False,
) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Decode every batch of a records blob in order.

    ``allow_partial_tail`` skips an incomplete last batch, which a Fetch response may
    carry (Kafka truncates at the byte limit); a Produce request never does.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        remaining = end - pos
        if allow_partial_tail and (
            remaining < LOG_OVERHEAD or _batch.read_batch_size(buf, pos) > remaining
        ):
            return
        header, records = read_batch(buf, pos, max_decompressed_bytes=max_decompressed_bytes)
        yield header, records
        pos += header.size


def iter_records(
    buf: bytes | bytearray | memoryview,
    *,
    include_control: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    allow_partial_tail: bool = False,
) -> Iterator[Record]:
    """Every record of every batch in a records blob (e.g. a Fetch response's records).

    Control records (transaction markers) are skipped unless ``include_control``, as a
    Kafka consumer does.
    """
    for header, records in iter_batches_with_records(
        buf,
        max_decompressed_bytes=max_decompressed_bytes,
        allow_partial_tail=allow_partial_tail,
    ):
        if include_control or not header.is_control:
            yield from records
