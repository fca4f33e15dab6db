"""Re-encode a subset of a batch's records for log compaction (Kafka's ``MemoryRecords.filterTo``).

:func:`rebuild_batch` keeps the original ``baseOffset`` and ``lastOffsetDelta`` (so the
last offset, and with it the producer's last sequence, survives even if the last record
is dropped), producer id/epoch, base sequence, codec, timestamp type, transactional and
control flags, partition leader epoch, and each kept record's offset, timestamp,
attributes, key, value and headers.  ``baseTimestamp`` becomes the first kept record's
timestamp, or the delete horizon (attributes bit 6, ``deleteHorizonMs``) once one is set,
as in Kafka.  A batch left with no records becomes Kafka's empty batch: no records,
uncompressed, both timestamps the original ``maxTimestamp``.

Pure (values in, bytes out) and thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence

from riverbed.protocol import batch as _batch
from riverbed.protocol.batch import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BatchHeader,
)
from riverbed.protocol.record_build import assemble_batch, encode_record
from riverbed.protocol.record_format import NO_TIMESTAMP, Record

__all__ = ["rebuild_batch"]


def rebuild_batch(
    header: BatchHeader,
    records: Sequence[Record],
    *,
    delete_horizon_ms: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Re-encode the kept ``records`` of the batch ``header`` came from (log compaction).

    Keeps baseOffset, lastOffsetDelta, producer id/epoch, base sequence, codec, timestamp
    type, transactional and control flags, partition leader epoch, and each record's
    offset, timestamp, attributes, key, value and headers.  ``baseTimestamp`` becomes
    ``delete_horizon_ms`` (setting the delete-horizon attribute) when given, else keeps
    the batch's existing delete horizon, else the first kept record's timestamp.  With no
    records left it writes Kafka's empty batch (no records, uncompressed, both
    timestamps the original maxTimestamp) that keeps a producer's last sequence.
    Raises ValueError if a record's offset is outside the batch or out of order.
    """
    attributes = header.attributes & (
        _batch.ATTR_COMPRESSION_MASK
        | ATTR_TIMESTAMP_TYPE
        | ATTR_TRANSACTIONAL
        | ATTR_CONTROL
        | ATTR_DELETE_HORIZON
    )
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
        base_timestamp = delete_horizon_ms
    elif attributes & ATTR_DELETE_HORIZON:
        base_timestamp = header.base_timestamp
    elif records:
        base_timestamp = records[0].timestamp
    else:
        base_timestamp = header.max_timestamp
    if not records:
        attributes &= ~_batch.ATTR_COMPRESSION_MASK
    log_append = bool(attributes & ATTR_TIMESTAMP_TYPE)
    max_timestamp = header.max_timestamp if log_append or not records else NO_TIMESTAMP
    section = bytearray()
    previous = -1
    for record in records:
        delta = record.offset - header.base_offset
        if not previous < delta <= header.last_offset_delta:
            raise ValueError(
                f"record offset {record.offset} is out of order or outside the batch "
                f"[{header.base_offset}, {header.last_offset}]"
            )
        previous = delta
        if not log_append and record.timestamp > max_timestamp:
            max_timestamp = record.timestamp
        encode_record(
            section,
            record.attributes,
            record.timestamp - base_timestamp,
            delta,
            record.key,
            record.value,
            record.headers,
        )
    return assemble_batch(
        section,
        records_count=len(records),
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        attributes=attributes,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
        compression_level=compression_level,
    )
