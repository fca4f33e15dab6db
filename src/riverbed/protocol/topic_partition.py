"""``TopicPartition``: one Kafka log partition, named the way every layer names it.

The one definition shared by the coordinator (OffsetFetch/OffsetDelete requests), the
broker (fetch purgatory keys) and the Spark source (checkpoint offsets).  It lives in
``protocol`` -- the bottom of the dependency chain (protocol <- storage <- coordinator <-
broker), which ``spark`` and ``cdc`` may import too, since it performs no I/O.

A :class:`typing.NamedTuple`: hashable, ordered by (topic, partition), picklable (Spark
ships it to its Python workers) and equal to the plain tuple ``(topic, partition)`` with
the same hash, so a dict keyed by either finds both.  Immutable; safe from any thread.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """One Kafka log partition (hashable, orderable, picklable)."""

    topic: str
    partition: int
