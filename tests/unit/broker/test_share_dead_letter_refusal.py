"""When a dead letter is written, the group's DLQ topic is checked as Kafka 4.4's
``ShareGroupDLQStateManager.ProduceRequestHandler.validateDlqTopic`` checks it: ``__``,
then a topic without ``errors.deadletterqueue.group.enable=true``, then a missing topic
(no auto-creation), then the broker's prefix; the words are Kafka 4.4's (read from its
``kafka-server-4.4.0.jar``).  The broker accepts the prefix setting."""

from __future__ import annotations

import pytest

from riverbed.broker.config import BrokerConfig
from riverbed.broker.share_dead_letters import refusal

G = "g"


@pytest.mark.parametrize(
    ("topic", "exists", "enabled", "prefix", "expected"),
    [
        ("dlq.t", True, True, "dlq.", None),
        ("orders.dead", True, True, "", None),  # an empty prefix: any name
        ("orders.dead", True, True, "orders.", None),
        (
            "orders.dead",
            True,
            True,
            "dlq.",
            "Configured DLQ topic name does not comply with the DLQ topic prefix in share "
            "group: g, topic: orders.dead, prefix: dlq..",  # Kafka adds a full stop
        ),
        (
            "dlq.t",
            False,
            False,
            "dlq.",
            "DLQ topic does not exist and auto create is disabled on cluster for share group: "
            "g, topic: dlq.t.",
        ),
        # a missing topic is refused before the prefix is looked at
        (
            "orders.dead",
            False,
            False,
            "dlq.",
            "DLQ topic does not exist and auto create is disabled on cluster for share group: "
            "g, topic: orders.dead.",
        ),
        # so is a topic without errors.deadletterqueue.group.enable=true
        (
            "orders.dead",
            True,
            False,
            "dlq.",
            "DLQ is not enabled on configured DLQ topic for share group: g, topic: orders.dead.",
        ),
        (
            "__x",
            True,
            True,
            "__",
            "Configured DLQ topic name in share group: g cannot start with __, topic: __x.",
        ),
    ],
)
def test_the_checks_come_in_kafkas_order_with_its_words(
    topic: str, exists: bool, enabled: bool, prefix: str, expected: str | None
) -> None:
    assert refusal(G, topic, exists, enabled, prefix) == expected


def test_the_broker_accepts_the_prefix_setting() -> None:
    config = BrokerConfig.from_props({"errors.deadletterqueue.topic.name.prefix": "orders."})
    assert config.source["errors.deadletterqueue.topic.name.prefix"] == "orders."
