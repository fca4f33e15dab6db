"""Encode magic v2 record batches (Kafka's ``MemoryRecordsBuilder``): records in, bytes out.

:func:`build_batch` writes records to append at consecutive offsets;
:func:`encode_record` and :func:`assemble_batch` are the two steps it is made of, shared
with :mod:`riverbed.protocol.control` (transaction markers) and
:mod:`riverbed.protocol.record_rebuild` (log compaction).  Each record is written in the
layout drawn in :mod:`riverbed.protocol.record_format`, the header in the layout drawn in
:mod:`riverbed.protocol.batch`.

Invariants of every batch written here: magic 2, ``batchLength`` and the CRC-32C of
bytes [21, end) computed over the final (possibly compressed) body, ``recordsCount``
equal to the records encoded, ``maxTimestamp`` the largest record timestamp (or as the
caller passes it); a header field out of its int range raises ValueError rather than
wrapping.  Header keys are encoded UTF-8 with ``surrogateescape``.

All functions are pure (bytes in, bytes out) and thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from riverbed.clock import SYSTEM_CLOCK, Clock
from riverbed.protocol import batch as _batch
from riverbed.protocol.batch import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    CRC_START,
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
)
from riverbed.protocol.compression import CompressionType, codec_for, compress
from riverbed.protocol.record_format import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP, Header
from riverbed.protocol.varint import zigzag_bytes

__all__ = [
    "RecordInput",
    "SimpleRecord",
    "assemble_batch",
    "build_batch",
    "encode_record",
]

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    """A record to append: offsets are assigned by :func:`build_batch`.

    ``timestamp`` None means the batch's base timestamp (or now, if that is None too).
    """

    key: bytes | None
    value: bytes | None
    headers: Sequence[Header | tuple[str, bytes | None]] = ()
    timestamp: int | None = None


RecordInput = (
    SimpleRecord
    | tuple[bytes | None, bytes | None]
    | tuple[bytes | None, bytes | None, int | None]
    | tuple[bytes | None, bytes | None, int | None, Sequence[Header | tuple[str, bytes | None]]]
)
"""What :func:`build_batch` accepts per record: a SimpleRecord or
``(key, value[, timestamp[, headers]])``."""

_zz = zigzag_bytes
_NULL = _zz(-1)


def encode_record(
    out: bytearray,
    attributes: int,
    timestamp_delta: int,
    offset_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[Header | tuple[str, bytes | None]],
) -> None:
    """Append one record, length prefix first, to ``out`` (layout:
    :mod:`~riverbed.protocol.record_format`).

    ``headers`` may be Header values or ``(key, value)`` pairs; an empty ``headers`` is
    written as a zero count.
    """
    body = bytearray((attributes & 0xFF,))
    body += _zz(timestamp_delta)
    body += _zz(offset_delta)
    if key is None:
        body += _NULL
    else:
        body += _zz(len(key))
        body += key
    if value is None:
        body += _NULL
    else:
        body += _zz(len(value))
        body += value
    if headers:
        hs = list(headers)
        body += _zz(len(hs))
        for h in hs:
            hkey, hvalue = (h.key, h.value) if isinstance(h, Header) else h
            kb = hkey.encode("utf-8", "surrogateescape")
            body += _zz(len(kb))
            body += kb
            if hvalue is None:
                body += _NULL
            else:
                body += _zz(len(hvalue))
                body += hvalue
    else:
        body.append(0)
    out += _zz(len(body))
    out += body


def assemble_batch(
    records_section: bytes | bytearray,
    *,
    records_count: int,
    base_offset: int,
    last_offset_delta: int,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
    compression_level: int | None,
) -> bytes:
    """Wrap an encoded records section in a v2 batch header and return the whole batch.

    Compresses ``records_section`` with the codec in ``attributes`` (at
    ``compression_level``), fills ``batchLength`` and the CRC-32C.  Raises ValueError for
    a header field out of range.
    """
    codec = attributes & _batch.ATTR_COMPRESSION_MASK
    payload = compress(codec, records_section, level=compression_level) if codec else None
    body = records_section if payload is None else payload
    out = bytearray(HEADER_SIZE)
    try:
        _HEADER.pack_into(
            out,
            0,
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            CURRENT_MAGIC,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            records_count,
        )
    except struct.error as exc:
        raise ValueError(f"record batch header field out of range: {exc}") from None
    out += body
    _CRC.pack_into(out, 17, _batch.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def _attributes(
    compression: int, timestamp_type: int, is_transactional: bool, is_control: bool
) -> int:
    codec = codec_for(compression)
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"timestamp_type must be 0 or 1, not {timestamp_type}")
    attributes = int(codec)
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    return attributes


def _normalize(
    item: RecordInput,
) -> tuple[bytes | None, bytes | None, int | None, Sequence[Header | tuple[str, bytes | None]]]:
    if isinstance(item, SimpleRecord):
        return item.key, item.value, item.timestamp, item.headers
    n = len(item)
    if n == 2:
        return item[0], item[1], None, ()
    if n == 3:
        return item[0], item[1], item[2], ()  # type: ignore[misc]
    if n == 4:
        return item  # type: ignore[return-value]
    raise TypeError(f"a record is a SimpleRecord or (key, value[, timestamp[, headers]]): {item!r}")


def build_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    compression: int = CompressionType.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    base_timestamp: int | None = None,
    timestamp_type: int = CREATE_TIME,
    partition_leader_epoch: int = -1,
    compression_level: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> bytes:
    """Encode ``records`` as one v2 batch at offsets ``base_offset, base_offset + 1, ...``.

    The base timestamp defaults to the first record's timestamp (or ``clock.now_ms()``);
    records without a timestamp get the base timestamp; ``maxTimestamp`` is the largest
    record timestamp.  Raises ValueError for an empty ``records`` or out-of-range
    fields and UnsupportedCompressionError for an unknown codec id.
    """
    if not records:
        raise ValueError("a record batch built for appending needs at least one record")
    attributes = _attributes(compression, timestamp_type, is_transactional, False)
    items = [_normalize(r) for r in records]
    if base_timestamp is None:
        first = items[0][2]
        base_timestamp = first if first is not None else clock.now_ms()
    section = bytearray()
    max_timestamp = NO_TIMESTAMP
    for delta, (key, value, timestamp, headers) in enumerate(items):
        ts = base_timestamp if timestamp is None else timestamp
        if ts > max_timestamp:
            max_timestamp = ts
        encode_record(section, 0, ts - base_timestamp, delta, key, value, headers)
    return assemble_batch(
        section,
        records_count=len(items),
        base_offset=base_offset,
        last_offset_delta=len(items) - 1,
        attributes=attributes,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        compression_level=compression_level,
    )
