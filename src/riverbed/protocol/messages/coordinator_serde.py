"""How Kafka frames the generated internal records as record keys and values.

Kafka's coordinators (``CoordinatorRecordSerde``) write each record of ``__consumer_offsets``,
``__transaction_state`` and ``__share_group_state`` as::

    key   = record type: int16 (the key schema's "apiKey") | key fields, schema version 0
    value = value version: int16                           | value fields, that version
            (or no value at all: a tombstone)

The record type selects the key and value classes in one of the tables of
:mod:`riverbed.protocol.messages.generated_records` (``GROUP_COORDINATOR_RECORDS``, ...).
Decoding raises :class:`DecodeError` for anything malformed, an unknown record type or an
unknown value version, and nothing else; bytes after the last field are ignored, as
Kafka's serde ignores them.  Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from typing import TypeVar

from riverbed.errors import DecodeError, UnsupportedVersionError
from riverbed.protocol.messages.base import Message

M = TypeVar("M", bound=Message)
RecordTable = dict[int, tuple[type[Message], type[Message]]]

_INT16 = struct.Struct(">h")


def encode_record_key(key: Message) -> bytes:
    """``key``'s record type, then ``key`` at version 0."""
    out = bytearray(_INT16.pack(key.API_KEY))
    key.encode_into(out, 0)
    return bytes(out)


def encode_record_value(value: Message, version: int) -> bytes:
    """``version``, then ``value`` at that version."""
    out = bytearray(_INT16.pack(version))
    value.encode_into(out, version)
    return bytes(out)


def read_prefix(buf: bytes | memoryview, what: str) -> int:
    """The leading int16 (record type of a key, version of a value)."""
    if len(buf) < 2:
        raise DecodeError(f"truncated {what}: {len(buf)} byte(s)")
    return int(_INT16.unpack_from(buf, 0)[0])


def decode_record_key(table: RecordTable, key: bytes | memoryview) -> Message:
    """A key of one of the record types in ``table``."""
    record_type = read_prefix(key, "record key")
    classes = table.get(record_type)
    if classes is None:
        raise DecodeError(f"unknown record type {record_type}")
    return classes[0].decode_from(memoryview(key), 2, 0)[0]


def decode_record_value(cls: type[M], value: bytes | memoryview) -> tuple[int, M]:
    """``(version, value)``: ``value`` decoded as ``cls`` at the version it starts with."""
    version = read_prefix(value, cls.NAME)
    try:
        return version, cls.decode_from(memoryview(value), 2, version)[0]
    except UnsupportedVersionError:
        raise DecodeError(f"unknown {cls.NAME} version {version}") from None
