"""Dead-letter topics for share groups, as Apache Kafka 4.4 does them (KIP-1191).

A record a consumer REJECTs, or one archived at the delivery-count limit, is copied to its
share group's dead-letter topic when the group config ``errors.deadletterqueue.topic.name``
names one and it passes Kafka 4.4's checks at write time (``ShareGroupDLQStateManager.
ProduceRequestHandler.validateDlqTopic``), in Kafka's order and with its words
(:func:`refusal`):

1. the name does not start with ``__`` (also refused as a group config);
2. a topic of that name that exists has ``errors.deadletterqueue.group.enable=true``;
3. it exists (Riverbed never creates one: Kafka's ``errors.deadletterqueue.auto.create.
   topics.enable`` is off by default and not a Riverbed setting);
4. it starts with the broker's ``errors.deadletterqueue.topic.name.prefix`` (``dlq.``;
   ``""``: any name).  Kafka 4.4 checks the prefix only here, not when the group config
   is set, so a group may name ``orders.dead``: its dead letters are then never written.

A name that fails one is not written to; the records are archived all the same (Kafka:
"Failed to write to DLQ, proceeding to ARCHIVED regardless.", logged at every write;
Riverbed logs a warning once per group and reason).  Control records and aborted
transactional records are never delivered, so never archived as dead letters.

**What is written.**  One record per archived offset, in one v2 batch per archived range,
to partition ``source partition % DLQ partitions``.  Its headers (strings as UTF-8 bytes,
numbers in decimal): ``__dlq.errors.topic``, ``__dlq.errors.partition``,
``__dlq.errors.offset``, ``__dlq.errors.group``, ``__dlq.errors.delivery.count``,
``__dlq.errors.message`` (:data:`REJECTED_MESSAGE` or :data:`DELIVERY_LIMIT_MESSAGE`).
The key and value are copied only with the group config
``errors.deadletterqueue.copy.record.enable=true`` (default false: null key and value);
the record's timestamp is kept.

**Crash behaviour: at-least-once copy.**  :class:`~riverbed.broker.share_partitions.
SharePartitions` calls :meth:`DeadLetters.on_archived` *before* it appends the ARCHIVED
state records to ``__share_group_state``, and a ShareAcknowledge (or a ShareFetch carrying
acknowledgements) is answered only after the fsyncs of both.  A process crash after the
copy and before the state record leaves the offsets un-archived: after the restart they
are delivered again and, when archived again, copied again (a duplicate, never a loss).
Under the durable flush policy each log fsyncs its own appends; the two fsyncs are not
ordered with respect to a machine (power) crash between them, which could keep the ARCHIVED
state without the copy: the guarantee is against process crashes.

Event-loop only.  The archived range is read from the source log on the loop (records a
consumer was just given: in the page cache) and appended to the DLQ log (an append is a
write to the page cache; its fsync completes through a future).
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from riverbed.broker.share_partitions import (
    DLQ_COPY_RECORD_KEY,
    DLQ_TOPIC_KEY,
    Flushes,
    SharePartitions,
    SharePartitionsHost,
)
from riverbed.protocol.record_build import build_batch
from riverbed.protocol.record_decode import iter_batches_with_records
from riverbed.protocol.topic_partition import TopicPartition
from riverbed.share.share_values import ArchivedRecords, ArchiveReason

if TYPE_CHECKING:
    from riverbed.protocol.record_format import Record
    from riverbed.storage.log import PartitionLog

log = logging.getLogger(__name__)

DLQ_GROUP_ENABLE_KEY = "errors.deadletterqueue.group.enable"
REJECTED_MESSAGE = "Offset rejected by client."
DELIVERY_LIMIT_MESSAGE = "Offset delivery count exceeded the threshold."
HEADER_PREFIX = "__dlq.errors."
READ_BYTES = 1 << 20


class DeadLetters:
    """The archive listener that copies dead letters (see the module docstring)."""

    def __init__(self, host: SharePartitionsHost, partitions: SharePartitions) -> None:
        self._host = host
        self._partitions = partitions
        self._warned: set[tuple[str, str]] = set()

    def on_archived(
        self, group_id: str, tp: TopicPartition, archived: Sequence[ArchivedRecords]
    ) -> Flushes:
        """Copy the archived ranges of ``tp`` to the group's DLQ topic; the fsyncs."""
        configs = self._partitions.group_config(group_id)
        dlq_name = configs.get(DLQ_TOPIC_KEY)
        if not dlq_name:
            return ()
        dlq = self._host.topics.get(dlq_name)
        enabled = dlq is not None and dlq.configs.get(DLQ_GROUP_ENABLE_KEY, "false") == "true"
        reason = refusal(
            group_id, dlq_name, dlq is not None, enabled, self._partitions.dead_letter_prefix
        )
        if reason is not None:
            if (group_id, reason) not in self._warned:
                self._warned.add((group_id, reason))
                log.warning("%s Failed to write to DLQ, proceeding to ARCHIVED regardless.", reason)
            return ()
        assert dlq is not None  # refusal() refuses a missing topic
        copy = configs.get(DLQ_COPY_RECORD_KEY, "false").lower() == "true"
        target = self._host.topics.partition_log(dlq_name, tp.partition % dlq.partitions)
        source = self._host.topics.partition_log(tp.topic, tp.partition)
        flushes: list[concurrent.futures.Future[None]] = []
        for span in archived:
            items = [
                _dead_letter(group_id, tp, record, span, copy)
                for record in _read(source, span.first_offset, span.last_offset)
            ]
            if not items:
                continue
            result = target.append(build_batch(items, clock=self._host.clock), check_producer=False)
            self._host.purgatory.notify(TopicPartition(dlq_name, tp.partition % dlq.partitions))
            if target.durable_acks:
                flushes.append(target.flush_future(result.last_offset))
        return tuple(flushes)


def refusal(group_id: str, topic: str, exists: bool, enabled: bool, prefix: str) -> str | None:
    """Why Kafka 4.4 writes no dead letter of ``group_id`` to ``topic`` (its message, its
    order of checks), or None; ``enabled``: the topic's ``errors.deadletterqueue.group.
    enable`` is true."""
    where = f"share group: {group_id}, topic: {topic}."
    if topic.startswith("__"):
        return (
            f"Configured DLQ topic name in share group: {group_id} cannot start with __, "
            f"topic: {topic}."
        )
    if exists and not enabled:
        return f"DLQ is not enabled on configured DLQ topic for {where}"
    if not exists:
        return f"DLQ topic does not exist and auto create is disabled on cluster for {where}"
    if prefix and not topic.startswith(prefix):
        return (
            "Configured DLQ topic name does not comply with the DLQ topic prefix in "
            f"share group: {group_id}, topic: {topic}, prefix: {prefix}."
        )
    return None


def _read(source: PartitionLog, first: int, last: int) -> list[Record]:
    """The data records of ``[first, last]`` still in the log (control batches skipped)."""
    out: list[Record] = []
    offset = max(first, source.log_start_offset)
    while offset <= last and offset < source.high_watermark:
        data = source.read(offset, READ_BYTES).records
        if not data:
            break
        moved = False
        for header, records in iter_batches_with_records(data, allow_partial_tail=True):
            if not header.is_control:
                out += [r for r in records if offset <= r.offset <= last]
            following = header.base_offset + header.last_offset_delta + 1
            if following > offset:
                offset, moved = following, True
        if not moved:
            break
    return out


def _dead_letter(
    group_id: str, tp: TopicPartition, record: Record, span: ArchivedRecords, copy: bool
) -> tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]:
    message = REJECTED_MESSAGE if span.reason is ArchiveReason.REJECTED else DELIVERY_LIMIT_MESSAGE
    headers: list[tuple[str, bytes | None]] = [
        (HEADER_PREFIX + "topic", tp.topic.encode()),
        (HEADER_PREFIX + "partition", str(tp.partition).encode()),
        (HEADER_PREFIX + "offset", str(record.offset).encode()),
        (HEADER_PREFIX + "group", group_id.encode()),
        (HEADER_PREFIX + "delivery.count", str(span.delivery_count).encode()),
        (HEADER_PREFIX + "message", message.encode()),
    ]
    if copy:
        return record.key, record.value, record.timestamp, headers
    return None, None, record.timestamp, headers
