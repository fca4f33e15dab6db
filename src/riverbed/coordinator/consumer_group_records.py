"""KIP-848 consumer group records of ``__consumer_offsets``, in Kafka's formats.

A consumer group (``group.protocol=consumer``) is persisted as six record types, Kafka's
own: the classes are generated from Kafka 4.4's schemas
(``kafka-4.4/records/group-coordinator/ConsumerGroup*.json``, see
:mod:`riverbed.protocol.messages.generated_records`), so that after a restart members keep
their epochs and assignments and a Kafka tool can read what we wrote.  Keys are
non-flexible: an int16 *record type* (the "key version" here), then ``string`` fields
(int16 length + UTF-8)::

    3 ConsumerGroupMetadataKey                 group
    4 ConsumerGroupPartitionMetadataKey        group
    5 ConsumerGroupMemberMetadataKey           group, member_id
    6 ConsumerGroupTargetAssignmentMetadataKey group
    7 ConsumerGroupTargetAssignmentMemberKey   group, member_id
    8 ConsumerGroupCurrentMemberAssignmentKey  group, member_id

Values start with an int16 value version (0) and are *flexible*: compact strings and
arrays (uvarint N+1, 0 = null), 16-byte uuids, and a tagged-fields section (uvarint
count) after every struct; unknown tagged fields are ignored::

    3 ConsumerGroupMetadataValue     epoch int32
    4 PartitionMetadataValue         topics [topic_id uuid, topic_name string,
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
                                     [topic_id uuid, partitions [int32], tagged 0:
                                     assignment_epochs [int32]?], partitions_pending_
                                     revocation (same)

Record 8's one tagged field, ``AssignmentEpochs`` (Kafka 4.3+, KIP-1251: the member epoch
each partition was assigned at, one per partition), is written; a record without it (older
Riverbed, older Kafka) reads as ``None`` and the loader takes the member epoch, as Kafka does.

Riverbed before the generated codec wrote PartitionMetadataValue with an int32 group epoch
before ``topics``, a field Kafka's schema does not have; those records still decode (the
epoch's first byte reads as a null ``topics`` array, which Kafka's layout never holds, so
the two layouts cannot be confused), and new ones are written in Kafka's layout.

Partitions travel by topic *id*, as in Kafka; :class:`TopicPartitionsById` keeps them so
and the coordinator maps ids to names with the broker's topics (partitions of a topic
that no longer exists are dropped on load).  A ``None`` value is a tombstone.  Pure
functions; thread-safe.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol, cast

from riverbed.errors import DecodeError
from riverbed.protocol.messages import generated_records as gen
from riverbed.protocol.messages.base import Message
from riverbed.protocol.messages.coordinator_serde import (
    decode_record_value,
    encode_record_key,
    encode_record_value,
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


AssignmentEpochs = tuple[tuple[int, ...] | None, ...]
"""Per entry of a :data:`TopicPartitionsById`, the assignment epoch of each partition (same
order), or ``None`` where the record carried none; ``()`` for none at all."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitionsById
    pending_revocation: TopicPartitionsById
    assigned_epochs: AssignmentEpochs = ()
    pending_revocation_epochs: AssignmentEpochs = ()


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


class _GroupKey(Protocol):
    """What the six generated key classes have in common."""

    group_id: str


# -- keys ------------------------------------------------------------------------------


def encode_key(key: ConsumerGroupRecordKey) -> bytes:
    if key.version not in CONSUMER_GROUP_KEY_VERSIONS:
        raise ValueError(f"not a consumer group key version: {key.version}")
    if (key.member_id is not None) != (key.version in MEMBER_KEY_VERSIONS):
        raise ValueError(f"key version {key.version}: member id {key.member_id!r}")
    cls = gen.GROUP_COORDINATOR_RECORDS[key.version][0]
    if key.member_id is None:
        return encode_record_key(cls(group_id=key.group))  # type: ignore[call-arg]
    return encode_record_key(cls(group_id=key.group, member_id=key.member_id))  # type: ignore[call-arg]


def decode_key_body(version: int, buf: bytes, pos: int) -> ConsumerGroupRecordKey:
    """The fields after the int16 version (already read, ``pos`` points past it)."""
    if version not in CONSUMER_GROUP_KEY_VERSIONS:
        raise DecodeError(f"not a consumer group key version: {version}")
    key, _ = gen.GROUP_COORDINATOR_RECORDS[version][0].decode_from(memoryview(buf), pos, 0)
    member_id: str | None = getattr(key, "member_id", None)
    return ConsumerGroupRecordKey(version, cast(_GroupKey, key).group_id, member_id)


# -- values: writing -------------------------------------------------------------------


def _topic_partitions(
    partitions: TopicPartitionsById, epochs: AssignmentEpochs = ()
) -> list[gen.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions]:
    out = []
    for i, (topic_id, ps) in enumerate(partitions):
        topic_epochs = epochs[i] if i < len(epochs) else None
        out.append(
            gen.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions(
                topic_id=topic_id,
                partitions=list(ps),
                assignment_epochs=None if topic_epochs is None else list(topic_epochs),
            )
        )
    return out


def _to_message(value: ConsumerGroupValue) -> Message:
    if isinstance(value, ConsumerGroupMetadataValue):
        return gen.ConsumerGroupMetadataValue(epoch=value.epoch)
    if isinstance(value, ConsumerGroupPartitionMetadataValue):
        topic = gen.ConsumerGroupPartitionMetadataValue.TopicMetadata
        return gen.ConsumerGroupPartitionMetadataValue(
            topics=[
                topic(topic_id=t.topic_id, topic_name=t.topic_name, num_partitions=t.num_partitions)
                for t in value.topics
            ]
        )
    if isinstance(value, ConsumerGroupMemberMetadataValue):
        return gen.ConsumerGroupMemberMetadataValue(
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=list(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
        )
    if isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        return gen.ConsumerGroupTargetAssignmentMetadataValue(
            assignment_epoch=value.assignment_epoch
        )
    if isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        member = gen.ConsumerGroupTargetAssignmentMemberValue
        return member(
            topic_partitions=[
                member.TopicPartition(topic_id=topic_id, partitions=list(ps))
                for topic_id, ps in value.partitions
            ]
        )
    return gen.ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch,
        state=value.state,
        assigned_partitions=_topic_partitions(value.assigned, value.assigned_epochs),
        partitions_pending_revocation=_topic_partitions(
            value.pending_revocation, value.pending_revocation_epochs
        ),
    )


def encode_value(value: ConsumerGroupValue) -> bytes:
    return encode_record_value(_to_message(value), VALUE_VERSION)


# -- values: reading -------------------------------------------------------------------


def _by_id(
    items: list[gen.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions]
    | list[gen.ConsumerGroupTargetAssignmentMemberValue.TopicPartition],
) -> TopicPartitionsById:
    return tuple((item.topic_id, tuple(item.partitions)) for item in items)


def _partition_metadata(value: bytes) -> ConsumerGroupPartitionMetadataValue:
    cls = gen.ConsumerGroupPartitionMetadataValue
    try:
        _, v = decode_record_value(cls, value)
    except DecodeError:
        # our own older layout: an int32 group epoch before Kafka's fields (module doc)
        if len(value) < 6 or value[:2] != b"\0\0":
            raise
        v, _ = cls.decode_from(memoryview(value), 6, VALUE_VERSION)
    return ConsumerGroupPartitionMetadataValue(
        tuple(TopicMetadataEntry(t.topic_id, t.topic_name, t.num_partitions) for t in v.topics)
    )


def decode_value(key_version: int, value: bytes) -> ConsumerGroupValue:
    """Decode the value of a record whose key has ``key_version`` (3-8)."""
    if key_version == CONSUMER_GROUP_PARTITION_METADATA:
        return _partition_metadata(value)
    if key_version not in CONSUMER_GROUP_KEY_VERSIONS:
        raise DecodeError(f"not a consumer group key version: {key_version}")
    _, v = decode_record_value(gen.GROUP_COORDINATOR_RECORDS[key_version][1], value)
    if isinstance(v, gen.ConsumerGroupMetadataValue):
        return ConsumerGroupMetadataValue(v.epoch)
    if isinstance(v, gen.ConsumerGroupMemberMetadataValue):
        return ConsumerGroupMemberMetadataValue(
            v.instance_id,
            v.rack_id,
            v.client_id,
            v.client_host,
            tuple(v.subscribed_topic_names),
            v.subscribed_topic_regex,
            v.rebalance_timeout_ms,
            v.server_assignor,
        )
    if isinstance(v, gen.ConsumerGroupTargetAssignmentMetadataValue):
        return ConsumerGroupTargetAssignmentMetadataValue(v.assignment_epoch)
    if isinstance(v, gen.ConsumerGroupTargetAssignmentMemberValue):
        return ConsumerGroupTargetAssignmentMemberValue(_by_id(v.topic_partitions))
    assert isinstance(v, gen.ConsumerGroupCurrentMemberAssignmentValue)
    return ConsumerGroupCurrentMemberAssignmentValue(
        v.member_epoch,
        v.previous_member_epoch,
        v.state,
        _by_id(v.assigned_partitions),
        _by_id(v.partitions_pending_revocation),
        _epochs(v.assigned_partitions),
        _epochs(v.partitions_pending_revocation),
    )


def _epochs(
    items: list[gen.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions],
) -> AssignmentEpochs:
    """Each entry's epochs; ``None`` where absent or not one per partition (malformed);
    ``()`` when no entry has any."""
    out = tuple(
        None
        if item.assignment_epochs is None or len(item.assignment_epochs) != len(item.partitions)
        else tuple(item.assignment_epochs)
        for item in items
    )
    return out if any(e is not None for e in out) else ()
