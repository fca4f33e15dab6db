"""Key/value records of the internal compacted topic ``__consumer_offsets``, in Kafka's formats.

Every coordinator state change that must survive a restart is one of these records; the
coordinator's state is rebuilt by replaying them in log order (:meth:`GroupCoordinator.replay`).
The formats are Kafka's own: the classes are generated from Kafka 4.4's schemas
(``kafka-4.4/records/group-coordinator/*.json``, see
:mod:`riverbed.protocol.messages.generated_records`) and framed as Kafka's coordinator serde
frames them (:mod:`riverbed.protocol.messages.coordinator_serde`), so a Kafka tool reading
``__consumer_offsets`` understands ours.  Keys start with an int16 *record type*, values
with an int16 value version; we write::

    OffsetCommitKey   (type 1)          group: string, topic: string, partition: int32
    OffsetCommitValue (version 3)       offset: int64, leader_epoch: int32,
                                        metadata: string, commit_timestamp: int64
    GroupMetadataKey  (type 2)          group: string
    GroupMetadataValue (version 3)      protocol_type: string, generation: int32,
                                        protocol: string?, leader: string?,
                                        current_state_timestamp: int64,
                                        members: int32 count, then per member:
                                          member_id: string, group_instance_id: string?,
                                          client_id: string, client_host: string,
                                          rebalance_timeout: int32, session_timeout: int32,
                                          subscription: bytes, assignment: bytes

(big-endian; ``string`` is an int16 length + UTF-8, -1 = null; ``bytes`` an int32 length).
KIP-848 consumer groups use record types 3-8, described in
:mod:`riverbed.coordinator.consumer_group_records`.

A ``None`` value is a tombstone: the offset, or the whole group, is deleted.  Decoding
accepts record type 0 (LegacyOffsetCommitKey, same layout) and every version of the value
schemas: OffsetCommitValue 0-4 and GroupMetadataValue 0-4 (older versions lack trailing
fields, v4 is flexible), which is what Kafka brokers have written since 0.10.  Pure
functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from riverbed.coordinator.consumer_group_records import (
    CONSUMER_GROUP_KEY_VERSIONS,
    ConsumerGroupRecordKey,
    decode_key_body,
)
from riverbed.errors import DecodeError
from riverbed.protocol.messages import generated_records as gen
from riverbed.protocol.messages.coordinator_serde import (
    decode_record_value,
    encode_record_key,
    encode_record_value,
    read_prefix,
)

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


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    return encode_record_key(
        gen.OffsetCommitKey(group=key.group, topic=key.topic, partition=key.partition)
    )


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    return encode_record_value(
        gen.OffsetCommitValue(
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp=value.commit_timestamp_ms,
        ),
        OFFSET_COMMIT_VALUE_VERSION,
    )


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    return encode_record_key(gen.GroupMetadataKey(group=key.group))


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    members = [
        gen.GroupMetadataValue.MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.subscription,
            assignment=m.assignment,
        )
        for m in value.members
    ]
    return encode_record_value(
        gen.GroupMetadataValue(
            protocol_type=value.protocol_type,
            generation=value.generation,
            protocol=value.protocol,
            leader=value.leader,
            current_state_timestamp=value.current_state_timestamp_ms,
            members=members,
        ),
        GROUP_METADATA_VALUE_VERSION,
    )


# -- reading -------------------------------------------------------------------------


def decode_key(key: bytes) -> OffsetCommitKey | GroupMetadataKey | ConsumerGroupRecordKey:
    """Decode a ``__consumer_offsets`` key: offsets (0, 1), classic groups (2), KIP-848
    consumer groups (3-8, :mod:`riverbed.coordinator.consumer_group_records`);
    :class:`DecodeError` for types we don't know."""
    version = read_prefix(key, "__consumer_offsets key")
    buf = memoryview(key)
    if version in (0, 1):
        offsets, _ = gen.OffsetCommitKey.decode_from(buf, 2, 0)
        return OffsetCommitKey(offsets.group, offsets.topic, offsets.partition)
    if version == 2:
        group, _ = gen.GroupMetadataKey.decode_from(buf, 2, 0)
        return GroupMetadataKey(group.group)
    if version in CONSUMER_GROUP_KEY_VERSIONS:
        return decode_key_body(version, key, 2)
    raise DecodeError(f"unknown __consumer_offsets key version {version}")


def decode_offset_commit_value(value: bytes) -> OffsetCommitValue:
    _, v = decode_record_value(gen.OffsetCommitValue, value)
    return OffsetCommitValue(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)


def decode_group_metadata_value(value: bytes) -> GroupMetadataValue:
    _, v = decode_record_value(gen.GroupMetadataValue, value)
    members = tuple(
        MemberMetadata(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            # versions before 1 have no rebalance timeout: Kafka uses the session timeout
            m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout,
            m.session_timeout,
            m.subscription,
            m.assignment,
        )
        for m in v.members
    )
    return GroupMetadataValue(
        v.protocol_type, v.generation, v.protocol, v.leader, v.current_state_timestamp, members
    )


def offset_commit_record(
    group_id: str, topic: str, partition: int, value: OffsetCommitValue | None
) -> CoordinatorRecord:
    key = encode_offset_commit_key(OffsetCommitKey(group_id, topic, partition))
    return CoordinatorRecord(
        group_id, key, None if value is None else encode_offset_commit_value(value)
    )


def group_metadata_record(group_id: str, value: GroupMetadataValue | None) -> CoordinatorRecord:
    key = encode_group_metadata_key(GroupMetadataKey(group_id))
    return CoordinatorRecord(
        group_id, key, None if value is None else encode_group_metadata_value(value)
    )
