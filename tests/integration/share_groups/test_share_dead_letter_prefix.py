"""A share group whose dead-letter topic lacks the broker's prefix, as Kafka 4.4 treats it:
the group config ``errors.deadletterqueue.topic.name=orders.dead`` is accepted (Kafka's
GROUP config refuses only names starting with ``__``), and when a record is REJECTed
nothing is written to ``orders.dead`` (it does not start with
``errors.deadletterqueue.topic.name.prefix``, ``dlq.``), the broker logs Kafka's reason,
and the record is archived all the same: the start offset moves past it.  ~15 s."""

from __future__ import annotations

import time
from collections.abc import Callable

from share_helpers import create_topic, produce

from riverbed.queue import Delivery, QueueWorkers, RejectDelivery, WorkerSettings
from riverbed.queue.admin import ShareGroupAdmin
from riverbed.testing.broker_process import BrokerProcess
from riverbed.testing.kafka_share_reference import enable_dead_letters, set_share_group_config
from riverbed.testing.scenarios.confluent import high_watermark

DEADLINE_S = 120.0  # a loaded machine
REFUSED = (
    "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: "
    "orders-group, topic: orders.dead, prefix: dlq.."  # Kafka adds a full stop
)


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _start_offset(bootstrap: str) -> int:
    with ShareGroupAdmin(bootstrap, timeout_s=60) as admin:
        (found,) = admin.describe_offsets("orders-group", {"orders-src": [0]})
    return found.start_offset


def test_a_dead_letter_topic_without_the_prefix_gets_nothing_and_the_record_is_archived(
    share_broker: BrokerProcess,
) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "orders-src", 1)
    set_share_group_config(bs, "orders-group", {"share.auto.offset.reset": "earliest"})
    enable_dead_letters(bs, "orders-group", "orders.dead")  # accepted, as by Kafka 4.4
    produce(bs, "orders-src", [b"poison"], 1)

    def reject(delivery: Delivery) -> None:
        raise RejectDelivery()

    settings = WorkerSettings(bs, "orders-group", ("orders-src",))
    with QueueWorkers(settings, reject) as workers:
        _wait(lambda: workers.stats.snapshot()["reject"] == 1, "the rejection")
        _wait(lambda: REFUSED in share_broker.log_path.read_text(errors="replace"), "the warning")
        _wait(lambda: _start_offset(bs) == 1, "the record archived")
    assert high_watermark(bs, "orders.dead") == 0
    log = share_broker.log_path.read_text(errors="replace")
    assert log.count(REFUSED) == 1  # once per group and reason
    assert "proceeding to ARCHIVED regardless" in log
