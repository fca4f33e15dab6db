"""The ``consumer`` embedded protocol: what classic JoinGroup/SyncGroup carry as opaque bytes.

The coordinator passes member metadata and assignments through untouched (client-side
assignors: range, roundrobin, cooperative-sticky all work because of that).  It looks
inside only to learn which topics a group consumes, for OffsetDelete
(``GROUP_SUBSCRIBED_TO_TOPIC``) and offset expiration.  Formats: Kafka's
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``, the generated
:mod:`riverbed.protocol.messages` classes, each after an int16 version (non-flexible,
big-endian; string = int16 length + UTF-8, bytes = int32 length, -1 = null)::

    Subscription v0-3: version int16, topics [int32 n][string], user_data bytes?,
                       owned_partitions (v1+) [int32 n][topic string, [int32 n][int32]],
                       generation_id int32 (v2+), rack_id string? (v3+)
    Assignment  v0-3:  version int16,
                       assigned_partitions [int32 n][topic string, [int32 n][int32]],
                       user_data bytes?

As Kafka's ``ConsumerProtocol`` does, a version newer than we know is read with the newest
layout we know (new versions only append fields) and bytes after the last field are
ignored.  Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import TypeVar

from riverbed.errors import DecodeError
from riverbed.protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from riverbed.protocol.messages.base import Message

CONSUMER_PROTOCOL_TYPE = "consumer"

M = TypeVar("M", bound=Message)
_NULL_ARRAY = struct.pack(">i", -1)


def _decode(cls: type[M], data: bytes) -> M:
    if len(data) < 2:
        raise DecodeError(f"truncated {cls.NAME}")
    (version,) = struct.unpack_from(">h", data, 0)
    if version < 0:
        raise DecodeError(f"unsupported {cls.NAME} version {version}")
    message, _ = cls.decode_from(memoryview(data), 2, min(version, cls.MAX_VERSION))
    return message


def subscription_topics(metadata: bytes) -> frozenset[str]:
    """Topics named in a ``ConsumerProtocolSubscription``; :class:`DecodeError` if malformed."""
    if metadata[2:6] == _NULL_ARRAY:
        return frozenset()  # a null topic list: nothing subscribed
    return frozenset(_decode(ConsumerProtocolSubscription, metadata).topics)


def encode_subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    """A version-0 ``ConsumerProtocolSubscription`` (tests and tools)."""
    out = bytearray(struct.pack(">h", 0))
    ConsumerProtocolSubscription(topics=list(topics), user_data=user_data).encode_into(out, 0)
    return bytes(out)


def encode_assignment(partitions: Mapping[str, list[int]]) -> bytes:
    """A version-0 ``ConsumerProtocolAssignment`` with null user data."""
    assigned = [
        ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=list(parts))
        for topic, parts in sorted(partitions.items())
    ]
    out = bytearray(struct.pack(">h", 0))
    ConsumerProtocolAssignment(assigned_partitions=assigned).encode_into(out, 0)
    return bytes(out)


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    """Assigned partitions of a ``ConsumerProtocolAssignment`` (empty bytes = nothing)."""
    if not data:
        return {}
    if data[2:6] == _NULL_ARRAY:
        return {}
    assignment = _decode(ConsumerProtocolAssignment, data)
    return {tp.topic: list(tp.partitions) for tp in assignment.assigned_partitions}
