"""Record batch (magic v2) headers: parse, validate and re-base without decoding records.

This is the broker's and the log's hot path.  A batch is treated as opaque bytes the way
Kafka treats it: read the fixed 61-byte header, check the length and the CRC-32C, and
rewrite the base offset in place.  Records are decoded only by
:mod:`riverbed.protocol.records`, never here.

Wire and on-disk layout (big-endian; byte offsets from the start of the batch)::

     0  baseOffset            int64   rewritten by the broker on append (not in the CRC)
     8  batchLength           int32   bytes after this field = total size - 12
    12  partitionLeaderEpoch  int32   (not in the CRC)
    16  magic                 int8    must be 2
    17  crc                   uint32  CRC-32C (Castagnoli) of bytes [21, end)
    21  attributes            int16   bits 0-2 codec, 3 timestampType, 4 transactional,
                                      5 control, 6 deleteHorizonMs set
    23  lastOffsetDelta       int32
    27  baseTimestamp         int64
    35  maxTimestamp          int64
    43  producerId            int64
    51  producerEpoch         int16
    53  baseSequence          int32
    57  recordsCount          int32
    61  records...            (compressed as a whole when the codec is not none)

Legacy message sets (magic 0 and 1) carry their magic byte at the same position 16;
they are refused with :class:`~riverbed.errors.LegacyMessageFormatError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c as _crc32c

from riverbed.errors import CorruptRecordError, LegacyMessageFormatError

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
CRC_START = 21
MAGIC_OFFSET = 16
CURRENT_MAGIC = 2

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_LENGTH = struct.Struct(">i")


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) through the C-accelerated ``crc32c`` package."""
    return int(_crc32c.crc32c(data))


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed header of one v2 record batch (see the module docstring for layout)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @classmethod
    def parse(cls, buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
        """Parse the header at ``buf[pos:]``; raises CorruptRecordError if too short."""
        if len(buf) - pos < HEADER_SIZE:
            magic = buf[pos + MAGIC_OFFSET] if len(buf) - pos > MAGIC_OFFSET else None
            if magic is not None and magic in (0, 1):
                raise LegacyMessageFormatError(
                    f"legacy message format (magic {magic}) is not supported; "
                    "use a client that writes record batches v2 (Kafka >= 0.11)"
                )
            raise CorruptRecordError(
                f"record batch header truncated: {len(buf) - pos} bytes, need {HEADER_SIZE}"
            )
        return cls(*_HEADER.unpack_from(buf, pos))

    @property
    def size(self) -> int:
        """Total size of the batch in bytes, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def check_magic(buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
    """Refuse anything but magic v2 at ``buf[pos:]`` with a precise error."""
    if len(buf) - pos <= MAGIC_OFFSET:
        raise CorruptRecordError(f"record batch truncated: {len(buf) - pos} bytes")
    magic = buf[pos + MAGIC_OFFSET]
    if magic in (0, 1):
        raise LegacyMessageFormatError(
            f"legacy message format (magic {magic}) is not supported; "
            "use a client that writes record batches v2 (Kafka >= 0.11)"
        )
    if magic != CURRENT_MAGIC:
        raise CorruptRecordError(f"unknown record batch magic {magic}")


def validate_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Validate one whole batch at ``buf[pos:]``: magic, length bounds and CRC-32C.

    Returns the parsed header.  Never decodes (or decompresses) the records.
    """
    check_magic(buf, pos)
    header = BatchHeader.parse(buf, pos)
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"record batch length {header.batch_length} is too small")
    end = pos + header.size
    if end > len(buf):
        raise CorruptRecordError(
            f"record batch claims {header.size} bytes but only {len(buf) - pos} remain"
        )
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptRecordError("record batch has a negative offset delta or record count")
    actual = crc32c(memoryview(buf)[pos + CRC_START : end])
    if actual != header.crc:
        raise CorruptRecordError(
            f"record batch CRC mismatch: stored {header.crc:#010x}, computed {actual:#010x}"
        )
    return header


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Validate and yield ``(position, header)`` for each batch of a records blob.

    Raises CorruptRecordError on trailing garbage or a partial batch: a Produce request
    carries whole batches only.
    """
    pos = 0
    n = len(buf)
    while pos < n:
        header = validate_batch(buf, pos)
        yield pos, header
        pos += header.size


def set_base_offset(buf: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    """Rewrite the base offset of the batch at ``buf[pos:]`` in place (CRC unaffected)."""
    _BASE_OFFSET.pack_into(buf, pos, base_offset)


def read_batch_size(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """Total size of the batch starting at ``pos`` from its length field, unvalidated."""
    (length,) = _LENGTH.unpack_from(buf, pos + 8)
    return int(length) + LOG_OVERHEAD


_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")


def set_log_append_time(buf: bytearray | memoryview, log_append_time_ms: int, pos: int = 0) -> None:
    """Stamp the batch at ``buf[pos:]`` with LogAppendTime, in place (Kafka's
    ``setMaxTimestamp(LOG_APPEND_TIME, now)``): sets the timestampType attribute bit,
    writes ``maxTimestamp`` and re-signs the CRC.  Readers then report
    ``log_append_time_ms`` as every record's timestamp.  The batch must already be valid.
    """
    (attributes,) = _ATTRIBUTES.unpack_from(buf, pos + CRC_START)
    _ATTRIBUTES.pack_into(buf, pos + CRC_START, attributes | ATTR_TIMESTAMP_TYPE)
    _TIMESTAMP.pack_into(buf, pos + 35, log_append_time_ms)
    end = pos + read_batch_size(buf, pos)
    _CRC.pack_into(buf, pos + 17, crc32c(memoryview(buf)[pos + CRC_START : end]))
