"""The ``riverbed`` source: a batch reader and a micro-batch stream reader over Kafka topics.

Planning runs on the driver (in the Python process Spark starts for the data source),
reading runs in Spark tasks: one input partition per log-partition offset range
``[from_offset, until_offset)``, read by :func:`~riverbed.spark.partition_reader.read_offset_range`
into Arrow record batches.

Stream offsets are Spark's Kafka source offsets (see :mod:`riverbed.spark.offsets`), kept
in the query's checkpoint by Spark.  A restarted query resumes from the checkpoint; the
broker keeps no state for us (no consumer group, no commits).  Partitions that appear
while the query runs (new partitions of a topic, new topics matching subscribePattern)
are read from their log start offset (like Spark's Kafka source).  Data loss is a
partition that disappears, offsets that move backwards, or records deleted (DeleteRecords,
retention) before the query read them -- the checkpointed offset is below the partition's
log start offset.  With ``failOnDataLoss=true`` (the default) the query fails with an
:class:`~riverbed.errors.OffsetOutOfRangeError` naming the partition and the lost offset
range; with ``false`` a warning naming them is logged (logger ``riverbed.spark``) and the
query skips ahead to the log start offset (the rule: :mod:`riverbed.spark.data_loss`).
The driver checks before planning each micro-batch; a task that still finds its start
deleted (deleted between planning and reading) applies the same rule (see
:mod:`riverbed.spark.partition_reader`).

Readers are pickled to Spark's Python workers; the driver-only Kafka admin client is
dropped on pickling and re-created lazily.  Not thread-safe (Spark calls one method at a
time).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from riverbed.errors import ConfigError
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.spark.data_loss import deleted_records_message, handle_data_loss
from riverbed.spark.offset_lookup import OffsetLookup
from riverbed.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetsDict,
    PartitionOffsets,
    from_offsets_dict,
    to_offsets_dict,
)
from riverbed.spark.options import (
    Earliest,
    GlobalTimestamp,
    Latest,
    OffsetSpec,
    PartitionTimestamps,
    SourceOptions,
    SpecificOffsets,
    select_partitions,
)
from riverbed.spark.partition_reader import read_offset_range
from riverbed.spark.planning import OffsetRange, offset_ranges, rate_limit


class KafkaInputPartition(InputPartition):
    """One Spark input partition: one :class:`OffsetRange` (picklable)."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range


class _Planner:
    """Shared driver-side logic: current partitions, resolving offset specs."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._lookup: OffsetLookup | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"_options": self._options, "_lookup": None}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self._options = state["_options"]
        self._lookup = None

    @property
    def lookup(self) -> OffsetLookup:
        if self._lookup is None:
            self._lookup = OffsetLookup(self._options.kafka_config(), self._options.poll_timeout_ms)
        return self._lookup

    def current_partitions(self) -> set[TopicPartition]:
        return select_partitions(self._options.subscription, self.lookup.partition_counts())

    def resolve(
        self, spec: OffsetSpec, partitions: set[TopicPartition], *, start: bool
    ) -> PartitionOffsets:
        """Concrete offsets for ``spec`` over ``partitions``."""
        name = "startingOffsets" if start else "endingOffsets"
        match spec:
            case Earliest():
                return self.lookup.earliest(partitions)
            case Latest():
                return self.lookup.latest(partitions)
            case SpecificOffsets():
                wanted = spec.as_dict()
                _check_same_partitions(name, set(wanted), partitions)
                earliest = self.lookup.earliest(tp for tp, o in wanted.items() if o == EARLIEST)
                latest = self.lookup.latest(tp for tp, o in wanted.items() if o == LATEST)
                return {tp: earliest.get(tp, latest.get(tp, o)) for tp, o in wanted.items()}
            case GlobalTimestamp(timestamp_ms):
                return self._by_timestamp({tp: timestamp_ms for tp in partitions}, start=start)
            case PartitionTimestamps():
                wanted = spec.as_dict()
                _check_same_partitions(name + "ByTimestamp", set(wanted), partitions)
                return self._by_timestamp(wanted, start=start)

    def _by_timestamp(
        self, timestamps: Mapping[TopicPartition, int], *, start: bool
    ) -> PartitionOffsets:
        found = self.lookup.for_timestamps(timestamps)
        missing = sorted(tp for tp, offset in found.items() if offset is None)
        if missing and start and self._options.timestamp_strategy == "error":
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise ConfigError(
                f"no record at or after the starting timestamp in {names} "
                "(set startingOffsetsByTimestampStrategy=latest to start at the end)"
            )
        latest = self.lookup.latest(missing)
        return {tp: (offset if offset is not None else latest[tp]) for tp, offset in found.items()}

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaInputPartition):
            return  # Spark's placeholder partition when there is nothing to read
        options = self._options
        yield from read_offset_range(
            options.kafka_config(),
            partition.offset_range,
            include_headers=options.include_headers,
            fail_on_data_loss=options.fail_on_data_loss,
            poll_timeout_ms=options.poll_timeout_ms,
        )

    def data_loss(self, message: str) -> None:
        """Fail with ``message`` under ``failOnDataLoss=true``; otherwise log it and go on."""
        handle_data_loss(message, fail_on_data_loss=self._options.fail_on_data_loss)

    def skip_deleted(self, begin: PartitionOffsets) -> PartitionOffsets:
        """``begin`` with every offset below its partition's log start offset moved up to it.

        Each such partition lost records ``[begin, log start)``: :meth:`data_loss`.
        """
        if not begin:
            return {}
        earliest = self.lookup.earliest(begin)
        moved = dict(begin)
        for tp in sorted(begin):
            if begin[tp] < earliest[tp]:
                self.data_loss(deleted_records_message(*tp, begin[tp], earliest[tp]))
                moved[tp] = earliest[tp]
        return moved

    def close(self) -> None:
        if self._lookup is not None:
            self._lookup.close()
            self._lookup = None


def _check_same_partitions(
    option: str, named: set[TopicPartition], actual: set[TopicPartition]
) -> None:
    if named != actual:

        def show(tps: set[TopicPartition]) -> str:
            return ", ".join(f"{t}-{p}" for t, p in sorted(tps)) or "none"

        raise ConfigError(
            f"{option} must name exactly the subscribed partitions: missing "
            f"{show(actual - named)}; unknown {show(named - actual)}"
        )


class RiverbedBatchReader(DataSourceReader):
    """``spark.read.format("riverbed")``: records between startingOffsets and endingOffsets."""

    def __init__(self, options: SourceOptions) -> None:
        self._planner = _Planner(options)
        self._options = options

    def partitions(self) -> Sequence[InputPartition]:
        planner = self._planner
        current = planner.current_partitions()
        start = planner.resolve(self._options.starting, current, start=True)
        end = planner.resolve(self._options.ending, current, start=False)
        ranges = []
        for tp in sorted(current):
            if end[tp] < start[tp]:
                planner.data_loss(
                    f"{tp.topic}-{tp.partition}: endingOffsets {end[tp]} is before "
                    f"startingOffsets {start[tp]}"
                )
            elif end[tp] > start[tp]:
                ranges.append(OffsetRange(tp.topic, tp.partition, start[tp], end[tp]))
        planner.close()
        return [KafkaInputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self._planner.read(partition)


class RiverbedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("riverbed")``: micro-batches of offset ranges."""

    def __init__(self, options: SourceOptions) -> None:
        self._planner = _Planner(options)
        self._options = options
        self._available_now: PartitionOffsets | None = None

    def initialOffset(self) -> OffsetsDict:
        current = self._planner.current_partitions()
        return to_offsets_dict(self._planner.resolve(self._options.starting, current, start=True))

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self._options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        current = self._planner.current_partitions()
        self._available_now = self._planner.lookup.latest(current)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> OffsetsDict:
        begin = from_offsets_dict(start, "checkpoint offsets")
        planner = self._planner
        current = planner.current_partitions()
        if self._available_now is not None:
            current &= set(self._available_now)
        for tp in sorted(set(begin) - current):
            if self._available_now is None:
                planner.data_loss(f"partition {tp.topic}-{tp.partition} disappeared")
        begin = {tp: offset for tp, offset in begin.items() if tp in current}
        begin = planner.skip_deleted(begin)
        begin.update(planner.lookup.earliest(current - set(begin)))
        latest = self._available_now or planner.lookup.latest(current)
        latest = {tp: latest[tp] for tp in current}
        for tp, offset in latest.items():
            if offset < begin[tp]:
                planner.data_loss(
                    f"{tp.topic}-{tp.partition}: latest offset {offset} is before the "
                    f"checkpointed offset {begin[tp]} (topic deleted and re-created?)"
                )
                begin[tp] = offset
        starts = {tp: begin[tp] for tp in current}
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(starts, latest, limit.max_rows)
        else:
            end = {tp: max(starts[tp], latest[tp]) for tp in current}
        return to_offsets_dict(end)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = from_offsets_dict(start, "checkpoint offsets")
        until = from_offsets_dict(end, "checkpoint offsets")
        reading = {tp: offset for tp, offset in begin.items() if until.get(tp, offset) > offset}
        begin.update(self._planner.skip_deleted(reading))
        new = set(until) - set(begin)
        if new:
            begin.update(self._planner.lookup.earliest(new))
        return [KafkaInputPartition(r) for r in offset_ranges(begin, until)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self._planner.read(partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, not in the broker."""

    def stop(self) -> None:
        self._planner.close()
