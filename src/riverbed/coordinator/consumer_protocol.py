"""The ``consumer`` embedded protocol: what classic JoinGroup/SyncGroup carry as opaque bytes.

The coordinator passes member metadata and assignments through untouched (client-side
assignors: range, roundrobin, cooperative-sticky all work because of that).  It looks
inside only to learn which topics a group consumes, for OffsetDelete
(``GROUP_SUBSCRIBED_TO_TOPIC``) and offset expiration.  Formats, from Kafka's
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` (non-flexible, big-endian;
string = int16 length + UTF-8, bytes = int32 length, -1 = null)::

    Subscription v0-3: version int16, topics [int32 n][string], user_data bytes?,
                       owned_partitions (v1+) [int32 n][topic string, [int32 n][int32]],
                       generation_id int32 (v2+), rack_id string? (v3+)
    Assignment  v0-3:  version int16,
                       assigned_partitions [int32 n][topic string, [int32 n][int32]],
                       user_data bytes?

Our own small codec because ``riverbed.protocol.messages`` did not exist when this was
written; it reads only the fields the coordinator needs and tolerates trailing fields of
newer versions.  Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from riverbed.errors import DecodeError

CONSUMER_PROTOCOL_TYPE = "consumer"


def _read_string(buf: bytes, pos: int) -> tuple[str, int]:
    if pos + 2 > len(buf):
        raise DecodeError("truncated consumer protocol string")
    (n,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if n < 0 or pos + n > len(buf):
        raise DecodeError("bad consumer protocol string length")
    try:
        return buf[pos : pos + n].decode(), pos + n
    except UnicodeDecodeError as exc:
        raise DecodeError("consumer protocol string is not UTF-8") from exc


def _read_int32(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 4 > len(buf):
        raise DecodeError("truncated consumer protocol int32")
    return int(struct.unpack_from(">i", buf, pos)[0]), pos + 4


def subscription_topics(metadata: bytes) -> frozenset[str]:
    """Topics named in a ``ConsumerProtocolSubscription``; :class:`DecodeError` if malformed."""
    if len(metadata) < 2:
        raise DecodeError("truncated consumer protocol subscription")
    n, pos = _read_int32(metadata, 2)
    if n < 0:
        return frozenset()
    topics = []
    for _ in range(n):
        topic, pos = _read_string(metadata, pos)
        topics.append(topic)
    return frozenset(topics)


def encode_subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    """A version-0 ``ConsumerProtocolSubscription`` (tests and tools)."""
    out = bytearray(struct.pack(">hi", 0, len(topics)))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    if user_data is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(user_data)) + user_data
    return bytes(out)


def encode_assignment(partitions: Mapping[str, list[int]]) -> bytes:
    """A version-0 ``ConsumerProtocolAssignment`` with null user data."""
    out = bytearray(struct.pack(">hi", 0, len(partitions)))
    for topic, parts in sorted(partitions.items()):
        raw = topic.encode()
        out += struct.pack(">h", len(raw)) + raw
        out += struct.pack(f">i{len(parts)}i", len(parts), *parts)
    out += struct.pack(">i", -1)
    return bytes(out)


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """Assigned partitions of a ``ConsumerProtocolAssignment`` (empty bytes = nothing)."""
    if not data:
        return {}
    if len(data) < 2:
        raise DecodeError("truncated consumer protocol assignment")
    n, pos = _read_int32(data, 2)
    result: dict[str, list[int]] = {}
    for _ in range(max(n, 0)):
        topic, pos = _read_string(data, pos)
        count, pos = _read_int32(data, pos)
        parts = []
        for _ in range(max(count, 0)):
            p, pos = _read_int32(data, pos)
            parts.append(p)
        result[topic] = parts
    return result
