"""Group administration with kafka-python's admin client: OffsetDelete (per-partition
GROUP_SUBSCRIBED_TO_TOPIC for a topic the live group consumes), DeleteGroups
(NON_EMPTY_GROUP for a live group) over a batched FindCoordinator (v4+, KIP-699)."""

from __future__ import annotations

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from groups_helpers import create_topic, produce, wait_until
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import GroupSubscribedToTopicError, NoError, NonEmptyGroupError
from kafka.protocol.metadata import FindCoordinatorRequest

from riverbed.testing.embedded import EmbeddedBroker


def _commit_simple(bootstrap: str, group: str, topic: str, offset: int) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        c.commit(offsets=[CTopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def test_offset_delete_and_delete_groups(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "live", 1)
    create_topic(bootstrap, "old", 1)
    produce(bootstrap, "live", [b"x"] * 3, 1)
    live = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "active",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    live.subscribe(["live"])
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        wait_until(
            lambda: live.assignment(), 30, "the live member's assignment", lambda: live.poll(0.05)
        )
        live.commit(
            offsets=[CTopicPartition("live", 0, 2), CTopicPartition("old", 0, 7)],
            asynchronous=False,
        )
        for g in ("empty-1", "empty-2"):
            _commit_simple(bootstrap, g, "old", 1)

        result = admin.delete_group_offsets(
            "active", [TopicPartition("live", 0), TopicPartition("old", 0)]
        )
        assert result == {
            TopicPartition("live", 0): GroupSubscribedToTopicError,
            TopicPartition("old", 0): NoError,
        }
        left = admin.list_group_offsets("active")["active"]
        assert set(left) == {TopicPartition("live", 0)}

        assert admin._manager.broker_version_data.api_version(FindCoordinatorRequest) >= 4
        deleted = dict(admin.delete_groups(["active", "empty-1", "empty-2"]))
        assert deleted == {"active": NonEmptyGroupError.__name__, "empty-1": "OK", "empty-2": "OK"}
        listed = {g["group_id"] for g in admin.list_groups()}
        assert "active" in listed and not {"empty-1", "empty-2"} & listed
    finally:
        admin.close()
        live.close()
