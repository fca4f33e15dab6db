"""What a :class:`~riverbed.storage.PartitionLog` serves, read the way a Fetch reads it:
for storage tests that compare a log's contents after appends, crashes and recovery."""

from __future__ import annotations

from riverbed.protocol.records import iter_batches_with_records
from riverbed.storage import PartitionLog


def served_values(log: PartitionLog, max_bytes: int = 1 << 20) -> list[bytes | None]:
    """Every record value from the log start offset to the log end offset, in offset
    order, read ``max_bytes`` at a time.  ``AssertionError`` when a read below the log
    end returns nothing (a gap a consumer would stall at)."""
    out: list[bytes | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, max_bytes).records
        assert data, f"nothing served at {offset} below the end {log.log_end_offset}"
        for header, records in iter_batches_with_records(data):
            out.extend(r.value for r in records if r.offset >= offset)
            offset = header.next_offset
    return out


def served_text(log: PartitionLog) -> dict[int, str]:
    """Offset -> value (UTF-8) of every record served from the log start offset to the
    log end offset.  ``AssertionError`` for a record without a value."""
    found: dict[int, str] = {}
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        for header, records in iter_batches_with_records(log.read(offset, 1 << 20).records):
            for r in records:
                assert r.value is not None, f"a null value at offset {r.offset}"
                found[r.offset] = r.value.decode()
            offset = header.next_offset
    return found


def batches_end(data: bytes) -> int:
    """Where the whole batches of a segment file's bytes end, by their length fields (a
    zero length ends them: pre-zeroed space, :mod:`riverbed.storage.preallocate`, or a
    torn tail)."""
    pos = 0
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos + 8 : pos + 12], "big")
        if length <= 0 or pos + 12 + length > len(data):
            break
        pos += 12 + length
    return pos
