"""Key/value records of the internal compacted topic ``__consumer_offsets``, in Kafka's formats.

Every coordinator state change that must survive a restart is one of these records; the
coordinator's state is rebuilt by replaying them in log order (:meth:`GroupCoordinator.replay`).
The formats are Kafka's own (``group-coordinator/src/main/resources/common/message``), so a
Kafka tool reading ``__consumer_offsets`` understands ours.  All integers are big-endian;
``string`` is an int16 length + UTF-8 (length -1 = null); ``bytes`` is an int32 length.
Keys start with an int16 *key version* that names the record type; values with an int16
value version::

    OffsetCommitKey   (key version 1)   group: string, topic: string, partition: int32
    OffsetCommitValue (version 3)       offset: int64, leader_epoch: int32,
                                        metadata: string, commit_timestamp: int64
    GroupMetadataKey  (key version 2)   group: string
    GroupMetadataValue (version 3)      protocol_type: string, generation: int32,
                                        protocol: string?, leader: string?,
                                        current_state_timestamp: int64,
                                        members: int32 count, then per member:
                                          member_id: string, group_instance_id: string?,
                                          client_id: string, client_host: string,
                                          rebalance_timeout: int32, session_timeout: int32,
                                          subscription: bytes, assignment: bytes

KIP-848 consumer groups use key versions 3-8, described in
:mod:`riverbed.coordinator.consumer_records`.

A ``None`` value is a tombstone: the offset, or the whole group, is deleted.  Decoding
accepts OffsetCommitKey version 0 (same layout) and OffsetCommitValue versions 0-3 and
GroupMetadataValue versions 0-3 (older versions lack trailing fields), which is what
Kafka brokers have written since 0.10.  Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from riverbed.coordinator.consumer_records import (
    CONSUMER_GROUP_KEY_VERSIONS,
    ConsumerGroupRecordKey,
    decode_key_body,
)
from riverbed.errors import DecodeError

OFFSET_COMMIT_KEY_VERSION = 1
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One record for ``__consumer_offsets``: append ``key``/``value`` to the partition of
    ``group_id`` (:func:`riverbed.coordinator.partition_for`).  ``group_id`` is not
    serialized; it only tells the broker where the record goes."""

    group_id: str
    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberMetadata, ...]


# -- writing -------------------------------------------------------------------------


def _string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += struct.pack(">h", -1)
        return
    raw = s.encode()
    out += struct.pack(">h", len(raw))
    out += raw


def _bytes(out: bytearray, b: bytes) -> None:
    out += struct.pack(">i", len(b))
    out += b


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    out = bytearray(struct.pack(">h", OFFSET_COMMIT_KEY_VERSION))
    _string(out, key.group)
    _string(out, key.topic)
    out += struct.pack(">i", key.partition)
    return bytes(out)


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    out = bytearray(struct.pack(">hqi", OFFSET_COMMIT_VALUE_VERSION, value.offset,
                                value.leader_epoch))
    _string(out, value.metadata)
    out += struct.pack(">q", value.commit_timestamp_ms)
    return bytes(out)


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    out = bytearray(struct.pack(">h", GROUP_METADATA_KEY_VERSION))
    _string(out, key.group)
    return bytes(out)


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    out = bytearray(struct.pack(">h", GROUP_METADATA_VALUE_VERSION))
    _string(out, value.protocol_type)
    out += struct.pack(">i", value.generation)
    _string(out, value.protocol)
    _string(out, value.leader)
    out += struct.pack(">qi", value.current_state_timestamp_ms, len(value.members))
    for m in value.members:
        _string(out, m.member_id)
        _string(out, m.group_instance_id)
        _string(out, m.client_id)
        _string(out, m.client_host)
        out += struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms)
        _bytes(out, m.subscription)
        _bytes(out, m.assignment)
    return bytes(out)


# -- reading -------------------------------------------------------------------------


class _Reader:
    __slots__ = ("_buf", "_pos")

    def __init__(self, buf: bytes) -> None:
        self._buf = buf
        self._pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self._pos + n > len(self._buf):
            raise DecodeError("truncated __consumer_offsets record")
        chunk = self._buf[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n == -1:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError as exc:
            raise DecodeError("string is not UTF-8") from exc

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise DecodeError("null in a non-nullable string")
        return s

    def bytes_(self) -> bytes:
        n = self.int32()
        return b"" if n == -1 else self._take(n)


def decode_key(key: bytes) -> OffsetCommitKey | GroupMetadataKey | ConsumerGroupRecordKey:
    """Decode a ``__consumer_offsets`` key: offsets (0, 1), classic groups (2), KIP-848
    consumer groups (3-8, :mod:`riverbed.coordinator.consumer_records`);
    :class:`DecodeError` for types we don't know."""
    r = _Reader(key)
    version = r.int16()
    if version in (0, 1):
        return OffsetCommitKey(r.string(), r.string(), r.int32())
    if version == 2:
        return GroupMetadataKey(r.string())
    if version in CONSUMER_GROUP_KEY_VERSIONS:
        return decode_key_body(version, key, 2)
    raise DecodeError(f"unknown __consumer_offsets key version {version}")


def decode_offset_commit_value(value: bytes) -> OffsetCommitValue:
    r = _Reader(value)
    version = r.int16()
    if not 0 <= version <= 3:
        raise DecodeError(f"unknown OffsetCommitValue version {version}")
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.int64()
    if version == 1:
        r.int64()  # expire_timestamp, ignored as Kafka does
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp)


def decode_group_metadata_value(value: bytes) -> GroupMetadataValue:
    r = _Reader(value)
    version = r.int16()
    if not 0 <= version <= 3:
        raise DecodeError(f"unknown GroupMetadataValue version {version}")
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    state_timestamp = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.int32()):
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        if rebalance_timeout == -1:
            rebalance_timeout = session_timeout
        members.append(
            MemberMetadata(member_id, instance_id, client_id, client_host, rebalance_timeout,
                           session_timeout, r.bytes_(), r.bytes_())
        )
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_timestamp,
                              tuple(members))


def offset_commit_record(group_id: str, topic: str, partition: int,
                         value: OffsetCommitValue | None) -> CoordinatorRecord:
    key = encode_offset_commit_key(OffsetCommitKey(group_id, topic, partition))
    return CoordinatorRecord(group_id, key,
                             None if value is None else encode_offset_commit_value(value))


def group_metadata_record(group_id: str, value: GroupMetadataValue | None) -> CoordinatorRecord:
    key = encode_group_metadata_key(GroupMetadataKey(group_id))
    return CoordinatorRecord(group_id, key,
                             None if value is None else encode_group_metadata_value(value))
