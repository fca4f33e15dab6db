"""``enrich``: an activity stream joined with the ``users`` table as it was at each
activity's event time (a temporal stream-table join), the table kept as Spark state
built from its CDC topic.

In:  ``activity`` ``{user_id, action, ts}``; ``<prefix>.main.users``, Debezium envelopes
     of ``users(id, name, country)`` (docs/cdc.md; read from offset 0 on a fresh
     checkpoint: the log is the table).
Out: ``activity-enriched``, key ``user_id`` as plain text, value (in this order)
     ``{"user_id", "action", "ts", "name", "country"}`` -- ``name`` / ``country`` of the
     users row version valid at ``ts``: a version is valid from its change's
     ``source.ts_ms`` (inclusive) until the next change of that id (exclusive), ties
     broken by topic order; both null before the first version and after a delete.

How (one Spark query, checkpoint ``<checkpoint>/enrich``): activities and row changes are
unioned and grouped by the user id (as text), then ``applyInPandasWithState`` keeps per
user a :class:`~riverbed.pipelines.temporal_table.TemporalKeyState` (the row's versions
and the activities not yet emitted) as one JSON string, in the RocksDB state store.  The
watermark ``W`` comes from the activity stream only (max ``ts`` read - 10 min - 1 ms,
``JOIN_WATERMARK_DELAY``): a users table that rarely changes must not hold it back, so
change rows are never late.

When an activity is emitted:

* running (no ``--available-now``): once the watermark passes its ``ts`` (an event-time
  timeout), when every change at or before ``ts`` has arrived, inputs being at most
  10 minutes out of order -- the output is final, never retracted;
* ``--available-now``: in the micro-batch that reads it, after that batch's changes are
  applied.  The first batch of a run reads the whole users changelog present (a
  ``maxOffsetsPerTrigger`` limits only ``activity``: :func:`table_read_options`), so the
  run emits every activity, each with the version its event time selects among all
  changes present when the run started -- what the running query emits for it when
  those changes are complete up to its ``ts``.  A change read by a *later* run with an
  earlier ``source.ts_ms`` than an activity already emitted does not correct it.  It
  cannot hold the last 10 minutes and emit them at the end instead: Spark gives the
  function no end-of-input signal, and releasing them needs the watermark past them,
  which would make every later activity late for good (docs/joins.md).

Late activities: Spark drops those with ``ts <= W`` when read, i.e. more than 10 minutes
behind the latest activity read before (one exactly 10 minutes behind is kept and
enriched; 10 minutes and 1 ms behind is dropped).  Output goes through the exactly-once
sink (:mod:`riverbed.pipelines.example_io`): a run killed mid-batch and restarted on its
checkpoint writes each record once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from riverbed.pipelines.changelog import changes_of, row_image, row_text
from riverbed.pipelines.example_io import (
    long_field,
    parsed_value,
    raw_field,
    read_topics,
    text_field,
    write_topic,
)
from riverbed.pipelines.examples import JOIN_WATERMARK_DELAY, ExampleOptions
from riverbed.pipelines.temporal_table import TemporalKeyState

DESCRIPTION = "activity enriched with the users row valid at its event time (CDC table join)"
ACTIVITY = "activity"
OUTPUT = "activity-enriched"
QUERY_NAME = "enrich"
TABLE_COLUMNS = ("name", "country")

UNION_SCHEMA = (
    "key string, kind string, event_time timestamp, ts long, user_id string, "
    "action string, row string, partition int, offset long"
)
OUTPUT_SCHEMA = "key string, value string"
STATE_SCHEMA = "state string"


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [ACTIVITY, users_topic(options)]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {OUTPUT: {}}


def users_topic(options: ExampleOptions) -> str:
    return f"{options.topic_prefix}.main.users"


def activity_rows(records: DataFrame) -> DataFrame:
    """``activity`` records -> union rows of kind ``a`` (watermarked on event time)."""
    v = parsed_value(records)
    rows = records.select(
        text_field(v, "$.user_id").alias("key"),
        F.lit("a").alias("kind"),
        F.timestamp_millis(long_field(v, "$.ts")).alias("event_time"),
        long_field(v, "$.ts").alias("ts"),
        raw_field(v, "$.user_id").alias("user_id"),
        raw_field(v, "$.action").alias("action"),
        F.lit(None).cast("string").alias("row"),
        F.col("partition"),
        F.col("offset"),
    ).where(F.col("key").isNotNull() & F.col("ts").isNotNull())
    return rows.withWatermark("event_time", JOIN_WATERMARK_DELAY) if rows.isStreaming else rows


def change_rows(records: DataFrame) -> DataFrame:
    """CDC records of ``users`` -> union rows of kind ``c`` (no event time: never late).

    ``row`` is ``{"name": <JSON text>, "country": <JSON text>}`` as JSON, or NULL for a
    delete.
    """
    changes = changes_of(records)
    image = F.when(F.col("op") == "d", F.col("before")).otherwise(F.col("after"))
    columns = F.to_json(F.struct(*(row_image(F.col("after"), c).alias(c) for c in TABLE_COLUMNS)))
    return changes.select(
        row_text(image, "id").alias("key"),
        F.lit("c").alias("kind"),
        F.lit(None).cast("timestamp").alias("event_time"),
        F.col("source_ts_ms").alias("ts"),
        F.lit(None).cast("string").alias("user_id"),
        F.lit(None).cast("string").alias("action"),
        F.when(F.col("op") != "d", columns).alias("row"),
        F.col("partition"),
        F.col("offset"),
    ).where(F.col("key").isNotNull())


def _json(raw: object) -> str:
    return "null" if raw is None or (isinstance(raw, float) and pd.isna(raw)) else str(raw)


def enriched_value(event: dict[str, Any], row: dict[str, str] | None) -> str:
    """The output value: ``{"user_id", "action", "ts", "name", "country"}``."""
    columns = row or {}
    return (
        f'{{"user_id":{_json(event["user_id"])},"action":{_json(event["action"])},'
        f'"ts":{int(event["ts"])},"name":{_json(columns.get("name"))},'
        f'"country":{_json(columns.get("country"))}}}'
    )


class EnrichFunction:
    """The ``applyInPandasWithState`` function (pickled to the Python workers).

    ``emit_on_arrival``: emit activities in the batch that reads them (``availableNow``)
    instead of when the watermark passes them.
    """

    def __init__(self, emit_on_arrival: bool) -> None:
        self.emit_on_arrival = emit_on_arrival

    def __call__(
        self, key: tuple[str], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        table = TemporalKeyState.from_json(state.get[0] if state.exists else None)
        watermark = state.getCurrentWatermarkMs()
        ready: list[dict[str, Any]] = []
        if not state.hasTimedOut:
            rows = pd.concat(list(frames), ignore_index=True)
            changes = rows[rows["kind"] == "c"]
            for change in changes.itertuples(index=False):
                row = _row_columns(change.row) if isinstance(change.row, str) else None
                table.apply_change(int(change.ts), int(change.partition), int(change.offset), row)
            activities = rows[rows["kind"] == "a"].sort_values(["ts", "partition", "offset"])
            events = [
                {"user_id": a.user_id, "action": a.action, "ts": int(a.ts)}
                for a in activities.itertuples(index=False)
            ]
            if self.emit_on_arrival:
                ready.extend(events)
            else:
                table.pending.extend(events)
        ready.extend(table.release(watermark if not self.emit_on_arrival else 2**62))
        # enrich before pruning: a released activity may need a version the new
        # watermark makes prunable (the watermark can pass the activity and the next
        # version's start in one step)
        out = [(key[0], enriched_value(e, table.row_at(e["ts"]))) for e in ready]
        table.prune(watermark)
        state.update((table.to_json(),))
        timeout = table.next_timeout_ms()
        if timeout is not None:
            state.setTimeoutTimestamp(max(timeout, watermark + 1))
        yield pd.DataFrame(out, columns=["key", "value"])


def _row_columns(text: str) -> dict[str, str]:
    import json

    doc = json.loads(text)
    return {name: doc[name] for name in TABLE_COLUMNS if doc.get(name) is not None}


def enrich(activity: DataFrame, users: DataFrame, emit_on_arrival: bool) -> DataFrame:
    """The join as ``key``, ``value`` rows (see the module docstring)."""
    union = activity_rows(activity).unionByName(change_rows(users))
    return union.groupBy("key").applyInPandasWithState(
        EnrichFunction(emit_on_arrival),
        OUTPUT_SCHEMA,
        STATE_SCHEMA,
        "append",
        GroupStateTimeout.EventTimeTimeout,
    )


def table_read_options(options: ExampleOptions) -> ExampleOptions:
    """The options of the users changelog's source: with ``available_now``, without a
    ``maxOffsetsPerTrigger`` (it still limits ``activity``), so that the first micro-batch
    of a run reads the whole changelog present and an activity emitted in any batch of
    the run sees every change present when the run started."""
    if not options.available_now:
        return options
    kept = tuple(
        (k, v) for k, v in options.extra_source_options if k.lower() != "maxoffsetspertrigger"
    )
    return dataclasses.replace(options, extra_source_options=kept)


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start the one query (checkpoint ``<checkpoint>/enrich``)."""
    activity = read_topics(spark, options, [ACTIVITY])
    users = read_topics(spark, table_read_options(options), [users_topic(options)])
    joined = enrich(activity, users, emit_on_arrival=options.available_now)
    return [write_topic(joined, options, OUTPUT, QUERY_NAME)]
