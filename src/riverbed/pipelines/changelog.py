"""Debezium change events (the ``riverbed cdc`` topics, docs/cdc.md) as Spark columns.

A CDC topic's record value is the envelope ``{"before", "after", "source": {..., "ts_ms"},
"op", "ts_ms"}``, or with ``--schemas-enable`` the same under ``"payload"``; the key is
``{"id": N}``.  :func:`changes_of` turns a stream of such records into one row per change::

    op           "r" | "c" | "u" | "d"   (a snapshot read, insert, update, delete)
    source_ts_ms when the change was made in the database (source.ts_ms)
    before       VARIANT, the old row (null for r / c)
    after        VARIANT, the new row (null for d)
    partition, offset   where the change is in the topic: per key, offset order is
                        commit order, which breaks ties between equal source_ts_ms

Tombstones (null value, after each ``d``), truncates (``t``: no key, no row) and values
that are not envelopes are dropped: a ``d`` already says the row is gone.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from riverbed.pipelines.example_io import parsed_value

ROW_OPS = ("r", "c", "u", "d")


def _envelope(records: DataFrame) -> Column:
    """The envelope as a VARIANT, unwrapping Kafka Connect's ``{"schema", "payload"}``."""
    value = parsed_value(records)
    payload = F.variant_get(value, "$.payload", "variant")
    wrapped = F.try_variant_get(value, "$.schema", "variant").isNotNull() & payload.isNotNull()
    return F.when(wrapped, payload).otherwise(value)


def changes_of(records: DataFrame) -> DataFrame:
    """CDC records (Spark's Kafka schema) -> ``op, source_ts_ms, before, after, partition,
    offset`` rows, one per row change (see the module docstring)."""
    envelope = _envelope(records)
    return records.select(
        F.try_variant_get(envelope, "$.op", "string").alias("op"),
        F.try_variant_get(envelope, "$.source.ts_ms", "long").alias("source_ts_ms"),
        F.variant_get(envelope, "$.before", "variant").alias("before"),
        F.variant_get(envelope, "$.after", "variant").alias("after"),
        F.col("partition"),
        F.col("offset"),
    ).where(F.col("op").isin(*ROW_OPS) & F.col("source_ts_ms").isNotNull())


def row_image(change_row: Column, column: str) -> Column:
    """A column of a row image (``before`` or ``after``) as JSON text (SQL NULL when the
    image or the column is missing)."""
    return F.to_json(F.variant_get(change_row, f"$.{column}", "variant"))


def row_text(change_row: Column, column: str) -> Column:
    """A column of a row image as plain text (join keys)."""
    return F.try_variant_get(change_row, f"$.{column}", "string")
