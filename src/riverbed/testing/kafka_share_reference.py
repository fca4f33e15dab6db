"""Apache Kafka 4.4 with share groups (KIP-932) on, for the queue tests and benchmarks.

Kafka 4.1.1 (the default of :mod:`riverbed.testing.kafka_reference`) has share groups only
as a preview; 4.2 made them generally available, so the client-side queue code
(:mod:`riverbed.queue`, ``riverbed webhook``, ``riverbed share-groups``) is checked against
4.4.0.  This module only chooses a version and ``server.properties`` entries; starting,
stopping and the cache layout are :class:`~riverbed.testing.kafka_reference.KafkaReference`'s.

Settings (``server.properties``) and why:

- ``group.share.record.lock.duration.ms``: the acquisition lock a consumer holds on each
  delivered record; a consumer that dies holding records sees them redelivered to others
  after it.  Kafka refuses values below ``group.share.min.record.lock.duration.ms``
  (15 s by default), so both are lowered for tests (default here: 2 s lock, 1 s minimum).
- ``group.share.session.timeout.ms`` (10 s here, minimum lowered to 6 s; Kafka: 45 s): a
  dead member keeps its *partition assignment* until then, and with as many members as
  partitions the records of its partitions wait for it, however short the lock.
- ``group.share.delivery.count.limit``: after this many deliveries a record is archived
  (Kafka's default 5, minimum 2).
- ``share.coordinator.state.topic.*`` / ``offsets.topic.*``: one replica on one node.

Share groups start at the latest offset by default: consumers that must see records
produced before they joined set the group config ``share.auto.offset.reset=earliest``
(:func:`set_share_group_config`), as Kafka's own tests do.

Thread-safety and crash behaviour are those of ``KafkaReference``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from riverbed.testing.kafka_reference import KafkaReference

SHARE_KAFKA_VERSION = "4.4.0"
DEFAULT_LOCK_DURATION_MS = 2_000
MIN_LOCK_DURATION_MS = 1_000


def share_server_properties(
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS, delivery_count_limit: int = 5
) -> dict[str, str]:
    """``server.properties`` entries for a one-node Kafka with share groups for tests."""
    if lock_duration_ms < MIN_LOCK_DURATION_MS:
        raise ValueError(f"lock_duration_ms must be >= {MIN_LOCK_DURATION_MS}")
    return {
        "group.share.min.record.lock.duration.ms": str(MIN_LOCK_DURATION_MS),
        "group.share.record.lock.duration.ms": str(lock_duration_ms),
        "group.share.delivery.count.limit": str(delivery_count_limit),
        "group.share.min.session.timeout.ms": "6000",
        "group.share.session.timeout.ms": "10000",
        "group.share.min.heartbeat.interval.ms": "1000",
        "group.share.heartbeat.interval.ms": "2000",
        "group.share.min.delivery.count.limit": "2",
        "share.coordinator.state.topic.num.partitions": "3",
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
    }


def share_kafka(
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS,
    delivery_count_limit: int = 5,
    overrides: Mapping[str, str] | None = None,
    version: str = SHARE_KAFKA_VERSION,
) -> KafkaReference:
    """An unstarted Kafka ``version`` broker with share groups; use as a context manager."""
    props = share_server_properties(lock_duration_ms, delivery_count_limit)
    props.update(overrides or {})
    return KafkaReference(version=version, overrides=props, heap="768m", startup_timeout_s=180.0)


def set_share_group_config(
    bootstrap: str, group: str, configs: Mapping[str, str], timeout_s: float = 30.0
) -> None:
    """Set group configs (e.g. ``share.auto.offset.reset=earliest``) on a share group.

    IncrementalAlterConfigs on a GROUP resource (Kafka 4.0+); the group need not exist yet.
    """
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=timeout_s)


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    timeout_s: float = 30.0,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create ``topic`` (replication factor 1) and wait for the broker's answer."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin: Any = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1, config=dict(config or {}))
    futures = admin.create_topics([new], operation_timeout=timeout_s)
    for future in futures.values():
        future.result(timeout=timeout_s)


def enable_dead_letters(
    bootstrap: str, group: str, dlq_topic: str, copy_record: bool = True
) -> None:
    """Give share group ``group`` the dead-letter topic ``dlq_topic`` (KIP-1191, Kafka 4.4).

    Kafka 4.4 needs three things, all set here: the topic exists with the topic config
    ``errors.deadletterqueue.group.enable=true`` (or the broker auto-creates it with
    ``errors.deadletterqueue.auto.create.topics.enable``); its name starts with the broker's
    ``errors.deadletterqueue.topic.name.prefix`` (default ``dlq.``); the group config
    ``errors.deadletterqueue.topic.name`` names it.  With
    ``errors.deadletterqueue.copy.record.enable`` the key and value are copied, otherwise
    only the headers are written: ``__dlq.errors.topic``, ``__dlq.errors.partition``,
    ``__dlq.errors.offset``, ``__dlq.errors.group``, ``__dlq.errors.delivery.count``,
    ``__dlq.errors.message`` (e.g. "Offset rejected by client.").  A REJECTed record and
    one archived at the delivery-count limit are both written.
    """
    create_topic(bootstrap, dlq_topic, 1, config={"errors.deadletterqueue.group.enable": "true"})
    set_share_group_config(
        bootstrap,
        group,
        {
            "errors.deadletterqueue.topic.name": dlq_topic,
            "errors.deadletterqueue.copy.record.enable": str(copy_record).lower(),
        },
    )
