"""Key/value records of the internal compacted topic ``__transaction_state``, in Kafka's format.

Every state change of a transactional id that must survive a restart is one record, keyed
by the id; the coordinator rebuilds its state by replaying them in log order (the last
value per id wins, a ``None`` value -- a tombstone -- forgets the id).  The classes are
generated from Kafka's schemas (``records/transaction-coordinator/TransactionLog*.json``)
and framed by :mod:`riverbed.protocol.messages.coordinator_serde`, as Kafka's
``TransactionLog.keyToBytes`` / ``valueToBytes`` frame them::

    key   (record type 0)   transactional_id: string
    value (version 0)       producer_id: int64, producer_epoch: int16,
                            transaction_timeout_ms: int32, transaction_status: int8,
                            transaction_partitions: [topic: string, partition_ids: [int32]]
                                (null in Empty), last_update_timestamp_ms: int64,
                            start_timestamp_ms: int64
    value (version 1)       the same, flexible (compact strings/arrays), then tagged fields
                            0 previous_producer_id: int64, 1 next_producer_id: int64,
                            2 client_transaction_version: int16, 3 next_producer_epoch: int16

Version 0 is written while ``transaction.version`` is 0, version 1 from level 1 on
(``TransactionVersion.transactionLogValueVersion``).  Like Kafka we write tag 2 (the
client's transaction version) and leave tag 3 unset; unlike Kafka we also write tag 0
after a producer-id rotation and tag 1 while a rotation is pending, so a restart does not
lose them (Kafka reads both tags but never writes them; the bytes are Kafka's own in every
other case).  Partitions are written sorted by topic, then partition (Kafka's order is a
hash map's).  Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass

from riverbed.coordinator.transactions.transaction_config import TV_0
from riverbed.coordinator.transactions.transaction_metadata import TransactionMetadata
from riverbed.coordinator.transactions.transaction_state import TransactionState
from riverbed.errors import DecodeError
from riverbed.protocol.messages import generated_records as gen
from riverbed.protocol.messages.coordinator_serde import (
    decode_record_value,
    encode_record_key,
    encode_record_value,
    read_prefix,
)
from riverbed.protocol.topic_partition import TopicPartition

TRANSACTION_LOG_KEY_TYPE = 0


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    """One record for ``__transaction_state``: append ``key``/``value`` to the partition of
    ``transactional_id`` (:func:`riverbed.coordinator.partition_for` with
    ``transaction.state.log.num.partitions``).  ``transactional_id`` is not serialized
    separately; it tells the broker where the record goes.

    ``answer_waits``: whether the answer to the call that wrote it waits for the record
    to be durable.  False for Ongoing records (AddPartitionsToTxn, AddOffsetsToTxn, the
    implicit add of Produce v12+): they are answered once appended; a crash that loses
    one is repaired at start-up by :func:`~.orphans.abort_unlisted`, and a later durable
    PrepareX record of the same id (same partition log, a prefix) makes it durable."""

    transactional_id: str
    key: bytes
    value: bytes | None
    answer_waits: bool = True


def value_version_for(transaction_version: int) -> int:
    """The TransactionLogValue version a cluster at ``transaction_version`` writes."""
    return 0 if transaction_version == TV_0 else 1


def encode_key(transactional_id: str) -> bytes:
    return encode_record_key(gen.TransactionLogKey(transactional_id=transactional_id))


def encode_value(meta: TransactionMetadata, version: int = 1) -> bytes:
    """``meta`` as a TransactionLogValue of ``version`` (0 or 1)."""
    if meta.state is TransactionState.EMPTY and meta.partitions:
        raise ValueError(f"{meta.transactional_id}: partitions in state Empty")
    partitions: list[gen.TransactionLogValue.PartitionsSchema] | None = None
    if meta.state is not TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(meta.partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        partitions = [
            gen.TransactionLogValue.PartitionsSchema(topic=t, partition_ids=p)
            for t, p in by_topic.items()
        ]
    value = gen.TransactionLogValue(
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_status=meta.state.id,
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=meta.last_update_ms,
        transaction_start_timestamp_ms=meta.start_ms,
        previous_producer_id=meta.previous_producer_id,
        next_producer_id=meta.next_producer_id,
        client_transaction_version=meta.client_transaction_version,
    )
    return encode_record_value(value, version)


def decode_key(key: bytes) -> str:
    """The transactional id of a ``__transaction_state`` key; :class:`DecodeError` for
    anything else."""
    record_type = read_prefix(key, "__transaction_state key")
    if record_type != TRANSACTION_LOG_KEY_TYPE:
        raise DecodeError(f"unknown __transaction_state key type {record_type}")
    decoded, _ = gen.TransactionLogKey.decode_from(memoryview(key), 2, 0)
    return decoded.transactional_id


def decode_value(transactional_id: str, value: bytes) -> TransactionMetadata:
    """A TransactionLogValue (version 0 or 1) as metadata (``last_producer_epoch`` -1, as
    Kafka's ``TransactionLog.read`` leaves it)."""
    _, v = decode_record_value(gen.TransactionLogValue, value)
    try:
        state = TransactionState.from_id(v.transaction_status)
    except ValueError as e:
        raise DecodeError(str(e)) from None
    partitions: frozenset[TopicPartition] = frozenset()
    if state is not TransactionState.EMPTY and v.transaction_partitions:
        partitions = frozenset(
            TopicPartition(p.topic, i) for p in v.transaction_partitions for i in p.partition_ids
        )
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=v.producer_id,
        producer_epoch=v.producer_epoch,
        timeout_ms=v.transaction_timeout_ms,
        state=state,
        partitions=partitions,
        start_ms=v.transaction_start_timestamp_ms,
        last_update_ms=v.transaction_last_update_timestamp_ms,
        previous_producer_id=v.previous_producer_id,
        next_producer_id=v.next_producer_id,
        client_transaction_version=v.client_transaction_version,
    )


def metadata_record(meta: TransactionMetadata, version: int) -> TransactionRecord:
    return TransactionRecord(
        meta.transactional_id,
        encode_key(meta.transactional_id),
        encode_value(meta, version),
        answer_waits=meta.state is not TransactionState.ONGOING,
    )


def tombstone(transactional_id: str) -> TransactionRecord:
    return TransactionRecord(transactional_id, encode_key(transactional_id), None)
