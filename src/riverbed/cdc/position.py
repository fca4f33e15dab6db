"""A connector's own position, kept in a compacted topic like Kafka Connect's offsets topic.

Topic: ``<prefix>.cdc-offsets`` (:func:`offsets_topic`), one partition, compacted, created
when missing.  Record format, as Kafka Connect's ``JsonConverter`` writes its offsets::

    key   = ["<connector name>", {<source partition>}]   e.g. ["riverbed", {"server": "riverbed"}]
    value = {<offset>}                                   e.g. {"lsn": 123456, "txId": 771}
            | null                                       (a tombstone: forget the position)

The latest value for a key is the position (compaction keeps exactly that).  What the
offset holds is the connector's business (PostgreSQL: the LSN acknowledged by the broker;
SQLite: the last acknowledged change ``seq`` and the change table's install id).

**Ordering.**  An offset record must be produced *after* the broker acknowledged the
changes it covers (use :meth:`~riverbed.cdc.sink.ChangeSink.acknowledged`), never ahead:
then a crash at any moment leaves a stored position at or behind the truth, so a restart
re-sends (duplicates) rather than skips.  Storing is asynchronous (through the sink's
producer); :meth:`OffsetStore.load` reads up to the high watermark at start.

Not thread-safe; no state is kept between calls except the topic name.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from riverbed.cdc.envelope import dumps
from riverbed.cdc.sink import ChangeSink
from riverbed.errors import CdcError


def offsets_topic(prefix: str) -> str:
    """``<prefix>.cdc-offsets``."""
    return f"{prefix}.cdc-offsets"


def offset_key(connector_name: str, partition: Mapping[str, Any]) -> bytes:
    """Kafka Connect's offset key: ``["<name>", {partition}]`` as compact JSON."""
    return dumps([connector_name, dict(partition)])


class OffsetStore:
    """Reads and writes one connector's position in ``topic`` (see module doc)."""

    def __init__(self, config: Mapping[str, Any], topic: str, *, timeout_s: float = 15.0) -> None:
        self._config = dict(config)
        self.topic = topic
        self._timeout_s = timeout_s

    def ensure_topic(self, sink: ChangeSink[Any]) -> None:
        """Create the offsets topic (one partition, compacted) when missing."""
        sink.ensure_topics([self.topic])

    def _high_watermark(self, consumer: Any, tp: Any) -> int:
        """``tp``'s high watermark; while its leader is not known yet (a topic just created
        on a multi-broker cluster, whose other brokers learn of it later) or moves, asked
        again until the timeout, then :class:`CdcError`."""
        from confluent_kafka import KafkaError, KafkaException

        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                return int(consumer.get_watermark_offsets(tp, timeout=self._timeout_s)[1])
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                retry = isinstance(error, KafkaError) and (
                    error.retriable()
                    or error.code()
                    in (
                        KafkaError.NOT_LEADER_FOR_PARTITION,
                        KafkaError.LEADER_NOT_AVAILABLE,
                        KafkaError.UNKNOWN_TOPIC_OR_PART,
                    )
                )
                if not retry or time.monotonic() > deadline:
                    raise CdcError(f"cannot read {self.topic!r}: {error or exc}") from None
            time.sleep(0.2)

    def load(self, key: bytes) -> dict[str, Any] | None:
        """The latest offset stored under ``key`` (``None``: never stored, or a tombstone).

        Reads every partition from the beginning to its high watermark.  Raises
        :class:`CdcError` when the topic cannot be read within the timeout."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

        consumer = Consumer(
            {
                **self._config,
                "group.id": f"riverbed-cdc-offsets-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "isolation.level": "read_committed",
            }
        )
        try:
            try:
                metadata = consumer.list_topics(self.topic, timeout=self._timeout_s)
            except KafkaException as exc:
                raise CdcError(f"cannot read {self.topic!r}: {exc}") from None
            topic_meta = metadata.topics.get(self.topic)
            if topic_meta is None or topic_meta.error is not None:
                return None
            ends: dict[int, int] = {}
            for partition in topic_meta.partitions:
                high = self._high_watermark(consumer, TopicPartition(self.topic, partition))
                if high > 0:
                    ends[partition] = high
            if not ends:
                return None
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in ends])
            latest: bytes | None = None
            deadline = time.monotonic() + self._timeout_s * 2
            remaining = dict(ends)
            while remaining:
                if time.monotonic() > deadline:
                    raise CdcError(f"timed out reading positions from {self.topic!r}")
                msg = consumer.poll(0.2)
                if msg is None:  # compaction or markers may leave the last offsets empty
                    for tp in consumer.position(
                        [TopicPartition(self.topic, p) for p in list(remaining)]
                    ):
                        if tp.offset >= remaining[tp.partition]:
                            remaining.pop(tp.partition, None)
                    continue
                if msg.error() is not None:
                    raise CdcError(f"cannot read {self.topic!r}: {msg.error()}")
                if msg.key() == key:
                    latest = msg.value()
                offset, partition = msg.offset(), msg.partition()
                if (
                    offset is not None
                    and partition is not None
                    and offset + 1 >= remaining.get(partition, 0)
                ):
                    remaining.pop(partition, None)
            if latest is None:
                return None
            value = json.loads(latest)
            return value if isinstance(value, dict) else None
        finally:
            consumer.close()

    def store(self, sink: ChangeSink[Any], key: bytes, offset: Mapping[str, Any] | None) -> None:
        """Queue ``offset`` (``None``: a tombstone) under ``key`` through ``sink``'s producer.
        Asynchronous: a failure surfaces on the sink's next poll."""
        sink.produce_untracked(self.topic, key, None if offset is None else dumps(dict(offset)))
