"""Drivers that feed a changelog topic into views: a consumer loop and Spark foreachBatch.

**Consumer loop** (:func:`run_views`): a confluent-kafka consumer (works against any
Kafka cluster), assigned every partition of the topics -- one process per set of
views, no group rebalance to wait for after a crash.  Each partition starts at the
*lowest* position any of the views needs -- ``min(high-water offset) + 1`` over the
views, or the beginning when a view has none -- so the views themselves, not the
consumer group, say where to resume; each view skips what it already holds (the offset
rule, :mod:`riverbed.views.change`).  A batch is applied to every view (one local
transaction per view), then the consumer's offsets are committed for monitoring (lag)
only.  A crash anywhere in that sequence is harmless: on restart the changes past the
lowest high-water offset are read again and the views that already hold them skip
them.  A rebuild is a run on an empty store: it starts at offset 0 (docs/views.md).

**Spark** (:func:`foreach_batch`): a ``foreachBatch`` function for a streaming query on
``format("riverbed")`` (columns ``topic``, ``partition``, ``offset``, ``key``,
``value``); it collects each micro-batch on the driver, in offset order, and applies it.
Spark may re-run a micro-batch after a failure; the offset rule makes that a no-op.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

from riverbed.views.change import Change, View, ViewError, decode_record


def view_positions(views: Sequence[View]) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> next offset to read``: the least any view needs (absent:
    some view has nothing of that partition, read from the beginning)."""
    marks = [v.high_water_offsets() for v in views]
    common = set(marks[0]) if marks else set()
    for m in marks[1:]:
        common &= set(m)
    return {pos: min(m[pos] for m in marks) + 1 for pos in common}


def apply_records(views: Sequence[View], records: Sequence[Any]) -> int:
    """Decode confluent-kafka messages and apply them to every view; returns changes."""
    changes: list[Change] = []
    for msg in records:
        change = decode_record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value())
        if change is not None:
            changes.append(change)
    for view in views:
        view.apply(changes)
    return len(changes)


def run_views(
    views: Sequence[View],
    bootstrap_servers: str,
    topics: Sequence[str],
    group_id: str,
    stop: threading.Event | None = None,
    stop_at_end: bool = False,
    batch_size: int = 500,
    client_config: dict[str, str] | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Keep ``views`` up to date from ``topics`` until ``stop`` is set (or, with
    ``stop_at_end``, until every partition has been read to the end it had at start).
    Every partition of ``topics`` is assigned to this consumer (partitions added later
    are not picked up: restart); the group is used for offset commits (lag) only.
    Returns the number of changes read.  Blocks the calling thread."""
    from confluent_kafka import Consumer, KafkaException

    stop = stop or threading.Event()
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group_id,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        **(client_config or {}),
    }
    consumer = Consumer(config)
    ends: dict[tuple[str, int], int] = {}
    read: dict[tuple[str, int], int] = {}  # next offset per partition, as consumed
    total = 0
    try:
        partitions = _assign_all(consumer, views, topics, read)
        if stop_at_end:
            for tp in partitions:
                _low, high = consumer.get_watermark_offsets(tp, timeout=30)
                ends[(tp.topic, tp.partition)] = high
        while not stop.is_set():
            if stop_at_end and _caught_up(consumer, read, ends):
                break
            messages = consumer.consume(batch_size, timeout=0.5)
            records = []
            for msg in messages:
                error = msg.error()
                if error is not None:
                    if error.code() == -191:  # _PARTITION_EOF
                        continue
                    raise ViewError(f"consumer: {error}")
                records.append(msg)
                read[(str(msg.topic()), int(msg.partition() or 0))] = int(msg.offset() or 0) + 1
            if not records:
                continue
            total += apply_records(views, records)
            if on_batch is not None:
                on_batch(total)
            with contextlib.suppress(KafkaException):  # monitoring only: the views
                consumer.commit(asynchronous=False)  # hold the positions that matter
    finally:
        consumer.close()
    return total


def _assign_all(
    consumer: Any, views: Sequence[View], topics: Sequence[str], read: dict[tuple[str, int], int]
) -> list[Any]:
    """Assign every partition of ``topics`` (no group rebalance: a restarted process
    need not wait out its dead predecessor's session), each at the views' position."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    positions = view_positions(views)
    partitions = []
    for topic in topics:
        metadata = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            reason = "no metadata" if metadata is None else (metadata.error or "no partitions")
            raise ViewError(f"topic {topic!r}: {reason}")
        for partition in sorted(metadata.partitions):
            start = positions.get((topic, partition))
            read[(topic, partition)] = start or 0
            partitions.append(
                TopicPartition(topic, partition, OFFSET_BEGINNING if start is None else start)
            )
    consumer.assign(partitions)
    return partitions


def _caught_up(
    consumer: Any, read: dict[tuple[str, int], int], ends: dict[tuple[str, int], int]
) -> bool:
    """Whether every partition was consumed up to the end it had when assigned (the
    consumer's position also moves past transaction markers, which are never returned)."""
    from confluent_kafka import TopicPartition

    lagging = [pos for pos, end in ends.items() if read.get(pos, 0) < end]
    if not lagging:
        return True
    positions = consumer.position([TopicPartition(t, p) for t, p in lagging])
    return all(tp.offset >= ends[(tp.topic, tp.partition)] for tp in positions)


def foreach_batch(views: Sequence[View]) -> Callable[[Any, int], None]:
    """A ``foreachBatch`` function applying a riverbed-source micro-batch to ``views``.

    Usage::

        view = SearchView("/data/search.db")
        (spark.readStream.format("riverbed").option("subscribe", "cdc.main.users").load()
              .writeStream.foreachBatch(foreach_batch([view]))
              .option("checkpointLocation", ckpt).start())
    """

    def apply_batch(df: Any, batch_id: int) -> None:
        rows = df.select("topic", "partition", "offset", "key", "value").collect()
        rows.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
        changes = [
            c
            for r in rows
            if (
                c := decode_record(
                    r["topic"],
                    r["partition"],
                    r["offset"],
                    None if r["key"] is None else bytes(r["key"]),
                    None if r["value"] is None else bytes(r["value"]),
                )
            )
            is not None
        ]
        for view in views:
            view.apply(changes)

    return apply_batch
