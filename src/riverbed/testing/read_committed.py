"""A read_committed consumer's filtering, for tests of the log and of Fetch.

Kafka's consumer (``CompletedFetch``) receives batches below the LSO plus the aborted
transactions overlapping them, and drops:

* control batches (COMMIT/ABORT markers);
* a transactional batch of producer P once an aborted transaction of P with
  ``first_offset <=`` the batch's last offset has been reached, until P's ABORT marker
  (:class:`riverbed.storage.transactions.AbortedBatches`).

:func:`committed_records` applies those rules to a whole partition read through
:meth:`riverbed.storage.log.PartitionLog.read` with READ_COMMITTED, so tests compare
what a real consumer would see with a model.  Not thread-safe; reads under the log's
own locking.
"""

from __future__ import annotations

from dataclasses import dataclass

from riverbed.protocol.records import iter_batches_with_records
from riverbed.storage.log import PartitionLog
from riverbed.storage.transactions import AbortedBatches, IsolationLevel


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    offset: int
    key: bytes | None
    value: bytes | None


def committed_records(
    log: PartitionLog, start: int | None = None, max_bytes: int = 1 << 16
) -> list[ConsumedRecord]:
    """Every record a read_committed consumer sees from ``start`` (default: the log
    start) up to the LSO, fetching ``max_bytes`` at a time."""
    offset = first = log.log_start_offset if start is None else start
    out: list[ConsumedRecord] = []
    aborted = AbortedBatches()
    while True:
        result = log.read(offset, max_bytes, isolation=IsolationLevel.READ_COMMITTED)
        if not result.records:
            return out
        aborted.add(result.aborted_transactions or ())
        for header, records in iter_batches_with_records(result.records):
            offset = header.next_offset
            if aborted.is_aborted(header) or header.is_control:
                continue
            out.extend(
                ConsumedRecord(r.offset, r.key, r.value) for r in records if r.offset >= first
            )
