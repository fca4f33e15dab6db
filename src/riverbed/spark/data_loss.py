"""The ``failOnDataLoss`` rule: one place that decides between failing and skipping.

Data loss is what a reader finds when records it was due to read are gone: a partition
that disappears, offsets that move backwards (topic deleted and re-created), or records
deleted (DeleteRecords, retention) before the query read them -- the next offset to read
is below the partition's log start offset.  Both the driver (planning a batch, see
:mod:`riverbed.spark.reader`) and a task (reading a range whose start was deleted after
planning, see :mod:`riverbed.spark.partition_reader`) find it; both call
:func:`handle_data_loss`:

* ``failOnDataLoss=true`` (the default, as in Spark's Kafka source): raise
  :class:`~riverbed.errors.OffsetOutOfRangeError` with the message, which fails the query;
* ``failOnDataLoss=false``: log the message as a warning on the ``riverbed.spark`` logger
  and return, and the caller skips ahead to the log start offset.

Pure functions; safe from any thread.
"""

from __future__ import annotations

import logging

from riverbed.errors import OffsetOutOfRangeError

LOG = logging.getLogger("riverbed.spark")


def deleted_records_message(
    topic: str, partition: int, position: int, log_start_offset: int, end_offset: int | None = None
) -> str:
    """``"t-0: records [4, 8) were deleted before the query read them (log start offset 8)"``.

    ``position`` is the next offset the reader wanted; ``end_offset`` (the high watermark,
    when known) is added to the parenthesis.
    """
    lost = (
        f"[{position}, {log_start_offset})"
        if log_start_offset > position
        else f"from offset {position}"
    )
    end = "" if end_offset is None else f", end {end_offset}"
    return (
        f"{topic}-{partition}: records {lost} were deleted before the query read them "
        f"(log start offset {log_start_offset}{end})"
    )


def handle_data_loss(message: str, *, fail_on_data_loss: bool) -> None:
    """Raise for ``message`` under ``failOnDataLoss=true``; otherwise log it and return."""
    if fail_on_data_loss:
        raise OffsetOutOfRangeError(
            f"{message}; some records may have been lost. Set failOnDataLoss=false to skip"
        )
    LOG.warning("%s; skipping (failOnDataLoss=false)", message)
