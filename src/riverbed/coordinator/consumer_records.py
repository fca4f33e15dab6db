"""KIP-848 consumer group records of ``__consumer_offsets``, in Kafka's formats.

A consumer group (``group.protocol=consumer``) is persisted as six record types, Kafka's
own (``group-coordinator/src/main/resources/common/message/ConsumerGroup*.json``), so
that after a restart members keep their epochs and assignments.  Keys are non-flexible:
an int16 *key version* naming the type, then ``string`` fields (int16 length + UTF-8)::

    3 ConsumerGroupMetadataKey                 group
    4 ConsumerGroupPartitionMetadataKey        group
    5 ConsumerGroupMemberMetadataKey           group, member_id
    6 ConsumerGroupTargetAssignmentMetadataKey group
    7 ConsumerGroupTargetAssignmentMemberKey   group, member_id
    8 ConsumerGroupCurrentMemberAssignmentKey  group, member_id

Values start with an int16 value version (0) and are *flexible*: compact strings and
arrays (uvarint N+1, 0 = null), 16-byte uuids, and a tagged-fields section (uvarint
count) after every struct; we write no tagged fields and skip any we read::

    3 ConsumerGroupMetadataValue     epoch int32
    4 PartitionMetadataValue         epoch int32, topics [topic_id uuid, topic_name string,
                                     num_partitions int32, partition_racks [partition
                                     int32, racks [string]]]
    5 MemberMetadataValue            instance_id string?, rack_id string?, client_id
                                     string, client_host string, subscribed_topic_names
                                     [string], subscribed_topic_regex string?,
                                     rebalance_timeout_ms int32, server_assignor string?
    6 TargetAssignmentMetadataValue  assignment_epoch int32
    7 TargetAssignmentMemberValue    topic_partitions [topic_id uuid, partitions [int32]]
    8 CurrentMemberAssignmentValue   member_epoch int32, previous_member_epoch int32,
                                     state int8 (0 STABLE, 1 UNREVOKED_PARTITIONS,
                                     2 UNRELEASED_PARTITIONS), assigned_partitions
                                     [topic_id uuid, partitions [int32]],
                                     partitions_pending_revocation (same)

Partitions travel by topic *id*, as in Kafka; :class:`TopicPartitionsById` keeps them so
and the coordinator maps ids to names with the broker's topics (partitions of a topic
that no longer exists are dropped on load).  A ``None`` value is a tombstone.  Pure
functions; thread-safe.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from riverbed.errors import DecodeError
from riverbed.protocol.primitives import (
    read_compact_array_length,
    read_compact_nullable_string,
    read_compact_string,
    read_tag,
    read_tag_header,
    read_uuid,
    write_compact_array_length,
    write_compact_nullable_string,
    write_compact_string,
)

CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_KEY_VERSIONS = frozenset(range(3, 9))
MEMBER_KEY_VERSIONS = frozenset({5, 7, 8})
VALUE_VERSION = 0

TopicPartitionsById = tuple[tuple[uuid.UUID, tuple[int, ...]], ...]
"""``(topic id, sorted partitions)`` pairs, sorted by topic id's bytes."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecordKey:
    """Any of the six keys: ``version`` names the type; ``member_id`` for 5, 7 and 8."""

    version: int
    group: str
    member_id: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class TopicMetadataEntry:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    epoch: int
    topics: tuple[TopicMetadataEntry, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    partitions: TopicPartitionsById


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitionsById
    pending_revocation: TopicPartitionsById


ConsumerGroupValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)

_VERSION_OF: dict[type, int] = {
    ConsumerGroupMetadataValue: CONSUMER_GROUP_METADATA,
    ConsumerGroupPartitionMetadataValue: CONSUMER_GROUP_PARTITION_METADATA,
    ConsumerGroupMemberMetadataValue: CONSUMER_GROUP_MEMBER_METADATA,
    ConsumerGroupTargetAssignmentMetadataValue: CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
    ConsumerGroupTargetAssignmentMemberValue: CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    ConsumerGroupCurrentMemberAssignmentValue: CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
}


def key_version_of(value: ConsumerGroupValue) -> int:
    return _VERSION_OF[type(value)]


# -- keys ------------------------------------------------------------------------------


def _string16(out: bytearray, s: str) -> None:
    raw = s.encode()
    out += struct.pack(">h", len(raw))
    out += raw


def encode_key(key: ConsumerGroupRecordKey) -> bytes:
    if key.version not in CONSUMER_GROUP_KEY_VERSIONS:
        raise ValueError(f"not a consumer group key version: {key.version}")
    if (key.member_id is not None) != (key.version in MEMBER_KEY_VERSIONS):
        raise ValueError(f"key version {key.version}: member id {key.member_id!r}")
    out = bytearray(struct.pack(">h", key.version))
    _string16(out, key.group)
    if key.member_id is not None:
        _string16(out, key.member_id)
    return bytes(out)


def decode_key_body(version: int, buf: bytes, pos: int) -> ConsumerGroupRecordKey:
    """The fields after the int16 version (already read, ``pos`` points past it)."""
    names = []
    for _ in range(2 if version in MEMBER_KEY_VERSIONS else 1):
        if pos + 2 > len(buf):
            raise DecodeError("truncated consumer group key")
        (n,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        if n < 0 or pos + n > len(buf):
            raise DecodeError("bad string length in a consumer group key")
        try:
            names.append(buf[pos : pos + n].decode())
        except UnicodeDecodeError as exc:
            raise DecodeError("consumer group key is not UTF-8") from exc
        pos += n
    return ConsumerGroupRecordKey(version, names[0], names[1] if len(names) > 1 else None)


# -- values: writing -------------------------------------------------------------------


def _array(out: bytearray, items: tuple[T, ...] | list[T],
           write: Callable[[bytearray, T], None]) -> None:
    write_compact_array_length(out, len(items))
    for item in items:
        write(out, item)


def _int32s(out: bytearray, values: tuple[int, ...]) -> None:
    write_compact_array_length(out, len(values))
    out += struct.pack(f">{len(values)}i", *values)


def _topic_partitions(out: bytearray, item: tuple[uuid.UUID, tuple[int, ...]]) -> None:
    out += item[0].bytes
    _int32s(out, item[1])
    out.append(0)  # tagged fields


def _topic_metadata(out: bytearray, t: TopicMetadataEntry) -> None:
    out += t.topic_id.bytes
    write_compact_string(out, t.topic_name)
    out += struct.pack(">i", t.num_partitions)
    write_compact_array_length(out, 0)  # partition racks: we know of none
    out.append(0)


def encode_value(value: ConsumerGroupValue) -> bytes:
    out = bytearray(struct.pack(">h", VALUE_VERSION))
    if isinstance(value, ConsumerGroupMetadataValue):
        out += struct.pack(">i", value.epoch)
    elif isinstance(value, ConsumerGroupPartitionMetadataValue):
        out += struct.pack(">i", value.epoch)
        _array(out, value.topics, _topic_metadata)
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        write_compact_nullable_string(out, value.instance_id)
        write_compact_nullable_string(out, value.rack_id)
        write_compact_string(out, value.client_id)
        write_compact_string(out, value.client_host)
        _array(out, value.subscribed_topic_names, write_compact_string)
        write_compact_nullable_string(out, value.subscribed_topic_regex)
        out += struct.pack(">i", value.rebalance_timeout_ms)
        write_compact_nullable_string(out, value.server_assignor)
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        out += struct.pack(">i", value.assignment_epoch)
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        _array(out, value.partitions, _topic_partitions)
    else:
        out += struct.pack(">iib", value.member_epoch, value.previous_member_epoch,
                           value.state)
        _array(out, value.assigned, _topic_partitions)
        _array(out, value.pending_revocation, _topic_partitions)
    out.append(0)  # tagged fields
    return bytes(out)


# -- values: reading -------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def fixed(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise DecodeError("truncated consumer group value")
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return tuple(int(v) for v in values)

    def int32(self) -> int:
        return self.fixed(">i")[0]

    def string(self) -> str:
        s, self.pos = read_compact_string(self.buf, self.pos)
        return s

    def nullable_string(self) -> str | None:
        s, self.pos = read_compact_nullable_string(self.buf, self.pos)
        return s

    def topic_id(self) -> uuid.UUID:
        u, self.pos = read_uuid(self.buf, self.pos)
        return u

    def array(self, read: Callable[[], T], min_size: int) -> tuple[T, ...]:
        n, self.pos = read_compact_array_length(self.buf, self.pos, min_size)
        return tuple(read() for _ in range(max(n, 0)))

    def skip_tags(self) -> None:
        n, self.pos = read_tag_header(self.buf, self.pos)
        for _ in range(n):
            _, _, self.pos = read_tag(self.buf, self.pos)

    def topic_partitions(self) -> tuple[uuid.UUID, tuple[int, ...]]:
        topic_id = self.topic_id()
        partitions = self.array(self.int32, 4)
        self.skip_tags()
        return topic_id, partitions

    def topic_metadata(self) -> TopicMetadataEntry:
        entry = TopicMetadataEntry(self.topic_id(), self.string(), self.int32())
        self.array(self.partition_racks, 2)
        self.skip_tags()
        return entry

    def partition_racks(self) -> None:
        self.int32()
        self.array(self.string, 1)
        self.skip_tags()


def decode_value(key_version: int, value: bytes) -> ConsumerGroupValue:
    """Decode the value of a record whose key has ``key_version`` (3-8)."""
    r = _Reader(value)
    try:
        version = r.fixed(">h")[0]
        if version != VALUE_VERSION:
            raise DecodeError(f"unknown value version {version} for key version {key_version}")
        decoded: ConsumerGroupValue
        if key_version == CONSUMER_GROUP_METADATA:
            decoded = ConsumerGroupMetadataValue(r.int32())
        elif key_version == CONSUMER_GROUP_PARTITION_METADATA:
            decoded = ConsumerGroupPartitionMetadataValue(r.int32(),
                                                          r.array(r.topic_metadata, 22))
        elif key_version == CONSUMER_GROUP_MEMBER_METADATA:
            decoded = ConsumerGroupMemberMetadataValue(
                r.nullable_string(), r.nullable_string(), r.string(), r.string(),
                r.array(r.string, 1), r.nullable_string(), r.int32(), r.nullable_string())
        elif key_version == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            decoded = ConsumerGroupTargetAssignmentMetadataValue(r.int32())
        elif key_version == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            decoded = ConsumerGroupTargetAssignmentMemberValue(r.array(r.topic_partitions, 18))
        elif key_version == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            epoch, previous, state = r.fixed(">iib")
            decoded = ConsumerGroupCurrentMemberAssignmentValue(
                epoch, previous, state, r.array(r.topic_partitions, 18),
                r.array(r.topic_partitions, 18))
        else:
            raise DecodeError(f"not a consumer group key version: {key_version}")
        r.skip_tags()
    except (struct.error, IndexError) as exc:
        raise DecodeError(f"truncated consumer group value: {exc}") from None
    return decoded
