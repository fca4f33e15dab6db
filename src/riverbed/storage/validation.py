"""Per-topic checks on produced batches before they are appended (Kafka's LogValidator).

Two rules, both Kafka 4's:

* **Timestamps** (``message.timestamp.type=CreateTime`` only): every record's timestamp
  must lie in ``[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]``
  (records with no timestamp, -1, are exempt) -> :class:`InvalidTimestampError`
  (INVALID_TIMESTAMP).  The "after" bound is checked on the batch header's
  ``maxTimestamp`` alone, which is exact for a well-formed batch, so the default
  configuration (after = 1 hour, before unbounded) never decodes records.  A finite
  "before" bound needs the smallest record timestamp, which only the records carry: the
  batch is decoded then.
* **Keys on compacted topics**: data records without a key refuse the request with
  :class:`InvalidRecordError` (INVALID_RECORD) whose ``record_errors`` name each of them
  ``(batch_index, "Compacted topic cannot accept message without key in topic partition
  <tp>")`` (no final period), as Kafka 4 does (Kafka before 2.4 answered CORRUPT_MESSAGE).  Control
  batches are exempt.  This needs the records, so appends to compacted topics decode
  their batches (as Kafka does).

Pure functions; no state, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from riverbed.errors import InvalidRecordError, InvalidTimestampError
from riverbed.protocol.batch import BatchHeader
from riverbed.protocol.records import Record, read_batch
from riverbed.storage.config import LONG_MAX, LogConfig

NO_TIMESTAMP = -1


def validate_batches(
    buf: bytes | bytearray | memoryview,
    headers: Sequence[tuple[int, BatchHeader]],
    config: LogConfig,
    now_ms: int,
    partition_name: str,
) -> None:
    """Raise if any batch of ``buf`` breaks the timestamp or key rules of ``config``.

    Keyless records on a compacted topic are all named, by their index counted across the
    batches of ``buf`` (Kafka's ``batchIndex``), in the error's ``record_errors``.
    """
    create_time = config.message_timestamp_type == "CreateTime"
    after = config.message_timestamp_after_max_ms
    before = config.message_timestamp_before_max_ms
    check_before = create_time and before < LONG_MAX
    keyless: list[tuple[int, str]] = []
    first_index = 0
    for pos, header in headers:
        if (
            create_time
            and header.max_timestamp != NO_TIMESTAMP
            and after < LONG_MAX
            and header.max_timestamp > now_ms + after
        ):
            raise _out_of_range(header.max_timestamp, header.last_offset, now_ms, config)
        count = header.last_offset_delta + 1
        if header.is_control or not (check_before or config.compact):
            first_index += count
            continue
        _h, records = read_batch(buf, pos)
        if config.compact:
            keyless += _keyless(records, first_index, partition_name)
        if check_before:
            _check_before(records, now_ms, config)
        first_index += len(records)
    if keyless:
        raise InvalidRecordError(
            f"One or more records have been rejected due to {len(keyless)} record errors in "
            "total, and only showing the first three errors at most: ["
            + ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in keyless[:3])
            + "]",
            tuple(keyless),
        )


def _keyless(records: list[Record], first_index: int, partition_name: str) -> list[tuple[int, str]]:
    message = (
        f"Compacted topic cannot accept message without key in topic partition {partition_name}"
    )
    return [(first_index + i, message) for i, record in enumerate(records) if record.key is None]


def _check_before(records: list[Record], now_ms: int, config: LogConfig) -> None:
    lowest = now_ms - config.message_timestamp_before_max_ms
    for record in records:
        if record.timestamp != NO_TIMESTAMP and record.timestamp < lowest:
            raise _out_of_range(record.timestamp, record.offset, now_ms, config)


def _out_of_range(
    timestamp: int, offset: int, now_ms: int, config: LogConfig
) -> InvalidTimestampError:
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    low = "-inf" if before == LONG_MAX else str(now_ms - before)
    high = "+inf" if after == LONG_MAX else str(now_ms + after)
    return InvalidTimestampError(
        f"Timestamp {timestamp} of message with offset {offset} is out of range. "
        f"The timestamp should be within [{low}, {high}]"
    )
