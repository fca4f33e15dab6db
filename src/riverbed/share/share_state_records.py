"""Share-partition state records of ``__share_group_state``, in Kafka's formats (KIP-932).

A share partition (one share group reading one topic partition) is persisted as two record
types, Kafka's own (``kafka-4.4/records/share-coordinator/``), all keyed by the same
``(group id, topic id, partition)``.  Keys are non-flexible: an int16 *record type*, then
``group_id string (int16 length + UTF-8) | topic_id uuid (16 bytes) | partition int32``::

    0 ShareSnapshotKey    the whole state of the share partition
    1 ShareUpdateKey      the state batches that changed since the previous record

Values start with an int16 value version (0) and are flexible (compact arrays, tagged
fields; ``DeliveryCompleteCount`` is tag 0, omitted when -1)::

    0 ShareSnapshotValue  snapshot_epoch int32, state_epoch int32, leader_epoch int32,
                          start_offset int64, create_timestamp int64, write_timestamp int64,
                          state_batches [first_offset int64, last_offset int64,
                                         delivery_state int8, delivery_count int16]
    1 ShareUpdateValue    snapshot_epoch int32, leader_epoch int32,
                          start_offset int64 (-1: unchanged), state_batches (same)

``delivery_state`` is 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED: an *acquired* offset is
never persisted as acquired (a lock does not survive a restart) but as AVAILABLE with the
delivery count it was acquired with.  The states of an offset, and what is written::

    AVAILABLE ──acquire──▶ ACQUIRED ──ACCEPT──────────────────▶ ACKNOWLEDGED  (2, final)
        ▲  (0, count)      (0, count) ──REJECT / GAP / limit──▶ ARCHIVED      (4, final)
        └──── RELEASE / lock timeout / member left ───┘

A record with no value (a tombstone) deletes the share partition's state (the group was
deleted).

Replay rule (see :mod:`riverbed.share.share_state_log`): a snapshot replaces the state; an
update whose ``snapshot_epoch`` equals the current snapshot's is laid over it (its batches
overwrite those offsets; ``start_offset`` >= 0 moves the start and drops what lies below);
any other update is stale and skipped.

Pure values and functions; thread-safe.  Decoding raises :class:`DecodeError` and nothing
else.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from enum import IntEnum

from riverbed.coordinator.partitioning import partition_for
from riverbed.errors import DecodeError
from riverbed.protocol.messages import generated_records as gen
from riverbed.protocol.messages.coordinator_serde import (
    decode_record_value,
    encode_record_key,
    encode_record_value,
    read_prefix,
)

SHARE_SNAPSHOT = 0
"""Record type (key "apiKey") of ShareSnapshotKey/Value."""
SHARE_UPDATE = 1
"""Record type (key "apiKey") of ShareUpdateKey/Value."""
VALUE_VERSION = 0
NO_START_OFFSET_CHANGE = -1
"""``start_offset`` of an update that does not move the share-partition start offset."""


class DeliveryState(IntEnum):
    """The persisted delivery state of a state batch (schema: 0, 2, 4)."""

    AVAILABLE = 0
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """Which share partition a record belongs to: Kafka's ``SharePartitionKey``."""

    group_id: str
    topic_id: uuid.UUID
    partition: int


def kafka_uuid_string(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def coordinator_key(key: SharePartitionKey) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey()``: ``"group:topicId:partition"``,
    the topic id as Kafka prints it (:func:`kafka_uuid_string`)."""
    return f"{key.group_id}:{kafka_uuid_string(key.topic_id)}:{key.partition}"


def state_partition_for(key: SharePartitionKey, num_partitions: int) -> int:
    """The ``__share_group_state`` partition holding ``key``'s records, as Kafka's
    ``ShareCoordinatorService.partitionFor``: ``Utils.abs(coordinatorKey.hashCode()) % n``."""
    return partition_for(coordinator_key(key), num_partitions)


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Offsets ``first_offset..last_offset`` (inclusive) sharing one state and count."""

    first_offset: int
    last_offset: int
    delivery_state: DeliveryState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """One ShareSnapshot (``is_snapshot``) or ShareUpdate record, decoded.

    ``state_epoch``, ``create_timestamp_ms`` and ``write_timestamp_ms`` exist only in
    snapshots (-1 in updates); ``start_offset`` is -1 in an update that does not move it;
    ``delivery_complete_count`` is KIP-1226's count of completed offsets at or above the
    start offset (-1: unknown).
    """

    key: SharePartitionKey
    is_snapshot: bool
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    state_epoch: int = -1
    delivery_complete_count: int = -1
    create_timestamp_ms: int = -1
    write_timestamp_ms: int = -1

    @property
    def record_type(self) -> int:
        return SHARE_SNAPSHOT if self.is_snapshot else SHARE_UPDATE

    def key_bytes(self) -> bytes:
        """The record key to append to ``__share_group_state``."""
        return encode_share_state_key(self.key, self.record_type)

    def value_bytes(self) -> bytes:
        """The record value to append to ``__share_group_state``."""
        if self.is_snapshot:
            return encode_record_value(
                gen.ShareSnapshotValue(
                    snapshot_epoch=self.snapshot_epoch,
                    state_epoch=self.state_epoch,
                    leader_epoch=self.leader_epoch,
                    start_offset=self.start_offset,
                    delivery_complete_count=self.delivery_complete_count,
                    create_timestamp=self.create_timestamp_ms,
                    write_timestamp=self.write_timestamp_ms,
                    state_batches=[
                        gen.ShareSnapshotValue.StateBatch(
                            first_offset=b.first_offset,
                            last_offset=b.last_offset,
                            delivery_state=int(b.delivery_state),
                            delivery_count=b.delivery_count,
                        )
                        for b in self.state_batches
                    ],
                ),
                VALUE_VERSION,
            )
        return encode_record_value(
            gen.ShareUpdateValue(
                snapshot_epoch=self.snapshot_epoch,
                leader_epoch=self.leader_epoch,
                start_offset=self.start_offset,
                delivery_complete_count=self.delivery_complete_count,
                state_batches=[
                    gen.ShareUpdateValue.StateBatch(
                        first_offset=b.first_offset,
                        last_offset=b.last_offset,
                        delivery_state=int(b.delivery_state),
                        delivery_count=b.delivery_count,
                    )
                    for b in self.state_batches
                ],
            ),
            VALUE_VERSION,
        )


@dataclass(frozen=True, slots=True)
class ShareStateTombstone:
    """A key with no value: the share partition's state is deleted."""

    key: SharePartitionKey
    record_type: int = SHARE_SNAPSHOT

    def key_bytes(self) -> bytes:
        return encode_share_state_key(self.key, self.record_type)


def encode_share_state_key(key: SharePartitionKey, record_type: int) -> bytes:
    """``record_type`` (0 snapshot, 1 update), then the key fields at version 0."""
    cls = gen.ShareSnapshotKey if record_type == SHARE_SNAPSHOT else gen.ShareUpdateKey
    return encode_record_key(
        cls(group_id=key.group_id, topic_id=key.topic_id, partition=key.partition)
    )


def decode_share_state_key(key: bytes | memoryview) -> tuple[int, SharePartitionKey]:
    """``(record type, key)`` of a ``__share_group_state`` record key."""
    record_type = read_prefix(key, "share state key")
    classes = gen.SHARE_COORDINATOR_RECORDS.get(record_type)
    if classes is None:
        raise DecodeError(f"unknown share state record type {record_type}")
    msg = classes[0].decode_from(memoryview(key), 2, 0)[0]
    assert isinstance(msg, gen.ShareSnapshotKey | gen.ShareUpdateKey)
    return record_type, SharePartitionKey(msg.group_id, msg.topic_id, msg.partition)


def _delivery_state(value: int) -> DeliveryState:
    try:
        return DeliveryState(value)
    except ValueError:
        raise DecodeError(f"unknown share delivery state {value}") from None


def decode_share_state_record(
    key: bytes | memoryview, value: bytes | memoryview | None
) -> ShareStateRecord | ShareStateTombstone:
    """Decode one ``__share_group_state`` record; ``value`` None is a tombstone."""
    record_type, skey = decode_share_state_key(key)
    return decode_share_state_value(record_type, skey, value)


def decode_share_state_value(
    record_type: int, skey: SharePartitionKey, value: bytes | memoryview | None
) -> ShareStateRecord | ShareStateTombstone:
    """The record whose key :func:`decode_share_state_key` decoded; ``value`` None is a
    tombstone.  (A replay decodes each distinct key once.)"""
    if value is None:
        return ShareStateTombstone(skey, record_type)
    if record_type == SHARE_SNAPSHOT:
        _, snap = decode_record_value(gen.ShareSnapshotValue, value)
        return ShareStateRecord(
            key=skey,
            is_snapshot=True,
            snapshot_epoch=snap.snapshot_epoch,
            leader_epoch=snap.leader_epoch,
            start_offset=snap.start_offset,
            state_batches=tuple(
                StateBatch(
                    b.first_offset,
                    b.last_offset,
                    _delivery_state(b.delivery_state),
                    b.delivery_count,
                )
                for b in snap.state_batches
            ),
            state_epoch=snap.state_epoch,
            delivery_complete_count=snap.delivery_complete_count,
            create_timestamp_ms=snap.create_timestamp,
            write_timestamp_ms=snap.write_timestamp,
        )
    _, upd = decode_record_value(gen.ShareUpdateValue, value)
    return ShareStateRecord(
        key=skey,
        is_snapshot=False,
        snapshot_epoch=upd.snapshot_epoch,
        leader_epoch=upd.leader_epoch,
        start_offset=upd.start_offset,
        state_batches=tuple(
            StateBatch(
                b.first_offset, b.last_offset, _delivery_state(b.delivery_state), b.delivery_count
            )
            for b in upd.state_batches
        ),
        delivery_complete_count=upd.delivery_complete_count,
    )
