"""Records inside magic v2 record batches: the public facade of the record codec.

Re-exports, unchanged, the names other layers use; each concept lives in its own module:

- :mod:`riverbed.protocol.record_format`: one record's wire layout; ``Record``, ``Header``.
- :mod:`riverbed.protocol.record_decode`: ``read_batch``, ``iter_batches_with_records``,
  ``iter_records`` (validation of header, CRC and every record; the hot read path).
- :mod:`riverbed.protocol.record_build`: ``SimpleRecord``, ``RecordInput``, ``build_batch``.
- :mod:`riverbed.protocol.control`: transaction markers, ``build_control_batch``,
  ``parse_control_record``, ``ControlRecordType``, ``EndTransactionMarker``.
- :mod:`riverbed.protocol.record_rebuild`: ``rebuild_batch`` for log compaction.

The batch header itself (61 bytes, parsed without decoding records) is
:mod:`riverbed.protocol.batch`.  Everything here is pure and thread-safe.
"""

from __future__ import annotations

from riverbed.protocol.control import CONTROL_RECORD_VERSION as CONTROL_RECORD_VERSION
from riverbed.protocol.control import END_TXN_MARKER_VERSION as END_TXN_MARKER_VERSION
from riverbed.protocol.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_control_batch,
    parse_control_record,
)
from riverbed.protocol.record_build import RecordInput, SimpleRecord, build_batch
from riverbed.protocol.record_decode import iter_batches_with_records, iter_records, read_batch
from riverbed.protocol.record_format import CREATE_TIME as CREATE_TIME
from riverbed.protocol.record_format import LOG_APPEND_TIME as LOG_APPEND_TIME
from riverbed.protocol.record_format import NO_TIMESTAMP as NO_TIMESTAMP
from riverbed.protocol.record_format import Header, Record
from riverbed.protocol.record_rebuild import rebuild_batch

__all__ = [
    "ControlRecordType",
    "EndTransactionMarker",
    "Header",
    "Record",
    "RecordInput",
    "SimpleRecord",
    "build_batch",
    "build_control_batch",
    "iter_batches_with_records",
    "iter_records",
    "parse_control_record",
    "read_batch",
    "rebuild_batch",
]
