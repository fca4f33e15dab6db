"""A dead-letter topic whose name lacks the broker's prefix, on Apache Kafka 4.4 and on
Riverbed: the group config naming it is accepted, a REJECTed record is archived (the share
partition's start offset moves past it) and nothing is written to the topic, because the
name does not start with ``errors.deadletterqueue.topic.name.prefix`` (``dlq.``).  Kafka
checks the prefix when it writes a dead letter, not when the group config is set.  The
Kafka run is gated (``kafka_variant``: ``-m kafka``); Riverbed's log line is checked in
``tests/integration/share_groups/test_share_dead_letter_prefix.py``.
"""

from __future__ import annotations

import pytest
from queue_helpers import QueueNames, produce, wait_until

from riverbed.queue import Delivery, QueueWorkers, RejectDelivery, WorkerSettings
from riverbed.queue.admin import ShareGroupAdmin
from riverbed.testing.kafka_share_reference import create_topic, enable_dead_letters
from riverbed.testing.scenarios.confluent import high_watermark


def _archived(bootstrap: str, group: str, topic: str) -> bool:
    """The share partition's state is stored with no lag: Kafka 4.4 answers start offset
    -1 while the record is acquired and (0, lag 0) once it is archived; Riverbed (1, lag 0)
    once it is archived."""
    with ShareGroupAdmin(bootstrap, timeout_s=60) as admin:
        (found,) = admin.describe_offsets(group, {topic: [0]})
    return found.start_offset >= 0 and found.lag == 0


@pytest.mark.kafka_variant
def test_a_dead_letter_topic_without_the_prefix_gets_nothing(queue_names: QueueNames) -> None:
    bs, group = queue_names.bootstrap, queue_names.group
    source, dead = f"{queue_names.topic}-one", f"dead.{queue_names.topic}"
    create_topic(bs, source, 1)
    enable_dead_letters(bs, group, dead)  # the group config is accepted
    produce(bs, source, [b"poison"])

    def reject(delivery: Delivery) -> None:
        raise RejectDelivery()

    settings = WorkerSettings(bs, group, (source,))
    with QueueWorkers(settings, reject) as workers:
        wait_until(lambda: workers.stats.snapshot()["reject"] == 1, "the rejection")
        wait_until(lambda: _archived(bs, group, source), "the record archived")
    assert high_watermark(bs, dead) == 0
