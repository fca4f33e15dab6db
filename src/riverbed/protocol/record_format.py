"""One record of a magic v2 record batch (Kafka's ``DefaultRecord``): its wire layout and values.

A batch's records section follows the fixed 61-byte header drawn in
:mod:`riverbed.protocol.batch` (decompressed as a whole first when the batch's codec is
not none, see :mod:`riverbed.protocol.compression`).  It holds ``recordsCount`` records
back to back, each laid out as (``varint`` = zig-zag int32, ``varlong`` = zig-zag int64,
see :mod:`riverbed.protocol.varint`)::

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

Header keys are UTF-8 with ``surrogateescape`` both ways, so any bytes survive a
read/rebuild round trip unchanged.  Timestamps are epoch milliseconds; a batch's
timestamp type is CreateTime (the producer's) or LogAppendTime (the broker's, in which
case every record's timestamp is the batch's ``maxTimestamp``).

Encoding lives in :mod:`riverbed.protocol.record_build`, decoding in
:mod:`riverbed.protocol.record_decode`.  The values here are immutable and thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CREATE_TIME", "LOG_APPEND_TIME", "NO_TIMESTAMP", "Header", "Record"]

CREATE_TIME = 0
"""Timestamp type 0: records carry the producer's timestamps."""
LOG_APPEND_TIME = 1
"""Timestamp type 1 (attributes bit 3): the broker's append time, the batch's maxTimestamp."""
NO_TIMESTAMP = -1
"""Kafka's ``RecordBatch.NO_TIMESTAMP``."""


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
