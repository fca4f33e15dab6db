"""Records inside magic v2 record batches: build, read, control markers, compaction rebuild.

:mod:`riverbed.protocol.batch` handles a batch's fixed 61-byte header without looking at
its records; this module decodes and encodes the records section that follows it
(decompressed as a whole first when the batch's codec is not none, see
:mod:`riverbed.protocol.compression`).  Each record is (``varint`` = zig-zag int32,
``varlong`` = zig-zag int64, see :mod:`riverbed.protocol.varint`)::

    length          varint   bytes of the record after this field
    attributes      int8     unused by Kafka (0); kept as read
    timestampDelta  varlong  timestamp - batch baseTimestamp
    offsetDelta     varint   offset - batch baseOffset
    keyLength       varint   -1 = null key
    key             bytes
    valueLength     varint   -1 = null value
    value           bytes
    headersCount    varint
    headers         [headerKeyLength varint, headerKey utf-8,
                     headerValueLength varint (-1 = null), headerValue bytes]

A *control batch* (attributes bit 5, always transactional) holds one control record: key
= ``version int16 (0), type int16`` (0 = ABORT, 1 = COMMIT), value = ``version int16 (0),
coordinatorEpoch int32`` for those two types.

Invariants checked on read (violations raise :class:`~riverbed.errors.CorruptRecordError`,
or another :class:`~riverbed.errors.RiverbedError` subclass, never anything else): the
header's magic, length and CRC-32C; exactly ``recordsCount`` records that each end where
their ``length`` says and together end where the batch does; no negative lengths but -1
for null key/value/header value; the decompressed size below ``max_decompressed_bytes``.
Header keys are decoded as UTF-8 with ``surrogateescape``, so any bytes survive a
read/rebuild round trip unchanged.  In a LogAppendTime batch every record's timestamp
is the batch's ``maxTimestamp`` (Kafka's rule).

Compaction (Kafka's ``MemoryRecords.filterTo``): :func:`rebuild_batch` re-encodes a subset
of a batch's records keeping the original ``baseOffset``, ``lastOffsetDelta`` (the last
offset and so the producer's last sequence survive even if the last record is dropped),
producer id/epoch, base sequence, attributes, leader epoch and each kept record's offset,
timestamp, key, value and headers; ``baseTimestamp`` becomes the first kept record's
timestamp (or the delete horizon), as in Kafka.

All functions are pure (bytes in, bytes or values out) and thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from riverbed.clock import SYSTEM_CLOCK, Clock
from riverbed.errors import CorruptRecordError
from riverbed.protocol import batch as _batch
from riverbed.protocol.batch import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    CRC_START,
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
)
from riverbed.protocol.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
    codec_for,
    compress,
    decompress,
)
from riverbed.protocol.varint import read_unsigned, read_varint, zigzag_bytes

__all__ = [
    "ControlRecordType",
    "EndTransactionMarker",
    "Header",
    "Record",
    "RecordInput",
    "SimpleRecord",
    "build_batch",
    "build_control_batch",
    "iter_batches_with_records",
    "iter_records",
    "parse_control_record",
    "read_batch",
    "rebuild_batch",
]

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1
CONTROL_RECORD_VERSION = 0
END_TXN_MARKER_VERSION = 0

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class Header:
    """One record header; ``key`` is UTF-8 text, ``value`` any bytes or None."""

    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record with its absolute offset and timestamp (ms)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0


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


class ControlRecordType(IntEnum):
    """Control record types (the int16 after the version in a control record's key)."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A decoded control record.  ``coordinator_epoch`` is -1 for types other than
    ABORT/COMMIT, whose value layout this module does not know."""

    type: int
    coordinator_epoch: int
    version: int = CONTROL_RECORD_VERSION

    @property
    def is_commit(self) -> bool:
        return self.type == ControlRecordType.COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ControlRecordType.ABORT


# --------------------------------------------------------------------------- encoding

_zz = zigzag_bytes
_NULL = _zz(-1)


def _encode_record(
    out: bytearray,
    attributes: int,
    timestamp_delta: int,
    offset_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[Header | tuple[str, bytes | None]],
) -> None:
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


def _assemble(
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
        _encode_record(section, 0, ts - base_timestamp, delta, key, value, headers)
    return _assemble(
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


def build_control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode a transaction marker: a transactional control batch of one COMMIT/ABORT
    record (uncompressed, base sequence -1, as Kafka's coordinator writes it)."""
    marker_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    section = bytearray()
    _encode_record(
        section,
        0,
        0,
        0,
        _CONTROL_KEY.pack(CONTROL_RECORD_VERSION, marker_type),
        _END_TXN_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch),
        (),
    )
    return _assemble(
        section,
        records_count=1,
        base_offset=base_offset,
        last_offset_delta=0,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        partition_leader_epoch=partition_leader_epoch,
        compression_level=None,
    )


def parse_control_record(record: Record) -> EndTransactionMarker:
    """Decode a control record's key (and, for ABORT/COMMIT, its value).

    Raises CorruptRecordError for a key shorter than 4 bytes or a short marker value.
    """
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise CorruptRecordError("control record key must hold version int16 + type int16")
    version, marker_type = _CONTROL_KEY.unpack_from(key)
    if marker_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return EndTransactionMarker(marker_type, -1, version)
    value = record.value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise CorruptRecordError("end transaction marker value too short")
    _, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    return EndTransactionMarker(marker_type, coordinator_epoch, version)


def rebuild_batch(
    header: BatchHeader,
    records: Sequence[Record],
    *,
    delete_horizon_ms: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Re-encode the kept ``records`` of the batch ``header`` came from (log compaction).

    Keeps baseOffset, lastOffsetDelta, producer id/epoch, base sequence, codec, timestamp
    type, transactional and control flags, partition leader epoch, and each record's
    offset, timestamp, attributes, key, value and headers.  ``baseTimestamp`` becomes
    ``delete_horizon_ms`` (setting the delete-horizon attribute) when given, else keeps
    the batch's existing delete horizon, else the first kept record's timestamp.  With no
    records left it writes Kafka's empty batch (no records, uncompressed, both
    timestamps the original maxTimestamp) that keeps a producer's last sequence.
    Raises ValueError if a record's offset is outside the batch or out of order.
    """
    attributes = header.attributes & (
        _batch.ATTR_COMPRESSION_MASK
        | ATTR_TIMESTAMP_TYPE
        | ATTR_TRANSACTIONAL
        | ATTR_CONTROL
        | ATTR_DELETE_HORIZON
    )
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
        base_timestamp = delete_horizon_ms
    elif attributes & ATTR_DELETE_HORIZON:
        base_timestamp = header.base_timestamp
    elif records:
        base_timestamp = records[0].timestamp
    else:
        base_timestamp = header.max_timestamp
    if not records:
        attributes &= ~_batch.ATTR_COMPRESSION_MASK
    log_append = bool(attributes & ATTR_TIMESTAMP_TYPE)
    max_timestamp = header.max_timestamp if log_append or not records else NO_TIMESTAMP
    section = bytearray()
    previous = -1
    for record in records:
        delta = record.offset - header.base_offset
        if not previous < delta <= header.last_offset_delta:
            raise ValueError(
                f"record offset {record.offset} is out of order or outside the batch "
                f"[{header.base_offset}, {header.last_offset}]"
            )
        previous = delta
        if not log_append and record.timestamp > max_timestamp:
            max_timestamp = record.timestamp
        _encode_record(
            section,
            record.attributes,
            record.timestamp - base_timestamp,
            delta,
            record.key,
            record.value,
            record.headers,
        )
    return _assemble(
        section,
        records_count=len(records),
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        attributes=attributes,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        compression_level=compression_level,
    )


# --------------------------------------------------------------------------- decoding


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
    """Decode ``count`` records filling ``data`` exactly (see the module docstring).

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
