"""Partition offsets as Spark's Kafka source writes them into a query's checkpoint.

Format (JSON, and the ``dict`` a Python stream reader hands Spark)::

    {"orders": {"0": 23, "1": 7}, "audit": {"0": 0}}

topic -> partition number (a decimal string) -> offset.  In ``startingOffsets`` /
``endingOffsets`` an offset of ``-2`` means *earliest* and ``-1`` means *latest*; in a
checkpoint every offset is concrete (>= 0) and is the *next* offset to read, so a
micro-batch reads ``[start, end)`` of each partition.

Pure values and functions, no I/O; safe to use from any thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from riverbed.errors import ConfigError
from riverbed.protocol.topic_partition import TopicPartition

EARLIEST = -2
"""Offset sentinel in user-supplied JSON: the partition's log start offset."""
LATEST = -1
"""Offset sentinel in user-supplied JSON: the partition's high watermark."""


PartitionOffsets = dict[TopicPartition, int]
OffsetsDict = dict[str, dict[str, int]]


def to_offsets_dict(offsets: Mapping[TopicPartition, int]) -> OffsetsDict:
    """``{TopicPartition: offset}`` -> Spark's nested ``{"topic": {"0": offset}}``."""
    out: OffsetsDict = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_offsets_dict(data: Mapping[str, object], option: str = "offsets") -> PartitionOffsets:
    """Spark's nested offsets dict -> ``{TopicPartition: offset}``.

    Raises :class:`ConfigError` naming ``option`` when the shape or a value is wrong.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{option}: expected a JSON object of topics, got {data!r}")
    out: PartitionOffsets = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, Mapping):
            raise ConfigError(
                f"{option}: topic {topic!r} must map to an object of partition -> offset, "
                f"got {partitions!r}"
            )
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"{option}: partition {partition!r} of topic {topic!r} is not an integer"
                ) from None
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise ConfigError(
                    f"{option}: offset {offset!r} of {topic}-{number} is not an integer"
                )
            if number < 0 or offset < EARLIEST:
                raise ConfigError(f"{option}: invalid partition/offset {topic}-{number}={offset}")
            out[TopicPartition(str(topic), number)] = offset
    return out


def parse_offsets_json(text: str, option: str) -> PartitionOffsets:
    """Parse a ``startingOffsets``/``endingOffsets`` JSON value (sentinels kept)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{option}: malformed JSON {text!r} ({exc.msg}); expected 'earliest', 'latest' "
            'or per-partition offsets like {"topic":{"0":23,"1":-2}}'
        ) from None
    return from_offsets_dict(data, option)


def parse_timestamps_json(text: str, option: str) -> PartitionOffsets:
    """Parse a ``startingOffsetsByTimestamp`` JSON value: topic -> partition -> epoch ms."""
    parsed = parse_offsets_json(text, option)
    for tp, ts in parsed.items():
        if ts < 0:
            raise ConfigError(f"{option}: timestamp of {tp.topic}-{tp.partition} is negative")
    return parsed
