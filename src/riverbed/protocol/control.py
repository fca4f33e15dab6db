"""Control records (Kafka's ``ControlRecordType`` and ``EndTransactionMarker``).

A *control batch* (attributes bit 5, always transactional) holds one control record,
written by the transaction coordinator to end a transaction on a partition::

    key    version int16 (0), type int16          0 = ABORT, 1 = COMMIT
    value  version int16 (0), coordinatorEpoch int32   (for ABORT and COMMIT)

Markers are built uncompressed with base sequence -1, as Kafka's coordinator writes them.
A control record of another type decodes with ``coordinator_epoch`` -1 (its value layout
is not known here).  All functions are pure and thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from riverbed.errors import CorruptRecordError
from riverbed.protocol.batch import ATTR_CONTROL, ATTR_TRANSACTIONAL, NO_SEQUENCE
from riverbed.protocol.record_build import assemble_batch, encode_record
from riverbed.protocol.record_format import Record

__all__ = [
    "CONTROL_RECORD_VERSION",
    "END_TXN_MARKER_VERSION",
    "ControlRecordType",
    "EndTransactionMarker",
    "build_control_batch",
    "parse_control_record",
]

CONTROL_RECORD_VERSION = 0
END_TXN_MARKER_VERSION = 0

_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


class ControlRecordType(IntEnum):
    """Control record types (the int16 after the version in a control record's key)."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A decoded control record.  ``coordinator_epoch`` is -1 for types other than
    ABORT/COMMIT, whose value layout this module does not know."""

    type: int
    coordinator_epoch: int
    version: int = CONTROL_RECORD_VERSION

    @property
    def is_commit(self) -> bool:
        return self.type == ControlRecordType.COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ControlRecordType.ABORT


def build_control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode a transaction marker: a transactional control batch of one COMMIT/ABORT
    record (uncompressed, base sequence -1, as Kafka's coordinator writes it)."""
    marker_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    section = bytearray()
    encode_record(
        section,
        0,
        0,
        0,
        _CONTROL_KEY.pack(CONTROL_RECORD_VERSION, marker_type),
        _END_TXN_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch),
        (),
    )
    return assemble_batch(
        section,
        records_count=1,
        base_offset=base_offset,
        last_offset_delta=0,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        partition_leader_epoch=partition_leader_epoch,
        compression_level=None,
    )


def parse_control_record(record: Record) -> EndTransactionMarker:
    """Decode a control record's key (and, for ABORT/COMMIT, its value).

    Raises CorruptRecordError for a key shorter than 4 bytes or a short marker value.
    """
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise CorruptRecordError("control record key must hold version int16 + type int16")
    version, marker_type = _CONTROL_KEY.unpack_from(key)
    if marker_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return EndTransactionMarker(marker_type, -1, version)
    value = record.value
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise CorruptRecordError("end transaction marker value too short")
    _, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    return EndTransactionMarker(marker_type, coordinator_epoch, version)
