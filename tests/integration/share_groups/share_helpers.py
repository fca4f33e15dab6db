"""Helpers of the share group tests (KIP-932): broker settings, a wire client, clients.

Share partitions start at the latest offset (``share.auto.offset.reset=latest``, Kafka's
default), created at a group's first ShareFetch of each partition, so a test first
:func:`warm_up`\\ s its consumers: it produces a probe record to every partition until one
of them has been delivered from each, which proves every share partition exists; records
produced after that are all delivered.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import AcknowledgeType, Message, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import IncrementalAlterConfigsRequest
from riverbed.protocol.messages.generated.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequest,
)
from riverbed.protocol.messages.generated.describe_share_group_offsets_request import (
    DescribeShareGroupOffsetsRequest,
)
from riverbed.testing.wire import WireClient

LOCK_MS = 3_000
BROKER_CONFIG = {
    "offsets.topic.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.heartbeat.interval.ms": "500",
    "group.share.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "500",
}
PROBE = b"__probe__"
INCREMENTAL_ALTER_CONFIGS, GROUP_RESOURCE = 44, 32


class Wire(WireClient):
    """A wire client named ``share-test``."""

    def __init__(self, bootstrap: str, timeout_s: float = 30.0) -> None:
        super().__init__(bootstrap, timeout_s, client_id="share-test")


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs SET on a GROUP resource (``share_x_y`` names ``share.x.y``)."""
    op = IncrementalAlterConfigsRequest.AlterableConfig
    req = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=GROUP_RESOURCE,
                resource_name=group,
                configs=[
                    op(name=k.replace("_", "."), config_operation=0, value=v)
                    for k, v in configs.items()
                ],
            )
        ],
        validate_only=False,
    )
    wire = Wire(bootstrap)
    try:
        answer = wire.call(INCREMENTAL_ALTER_CONFIGS, 1, req).responses[0]
        assert answer.error_code == ErrorCode.NONE, answer
    finally:
        wire.close()


def describe_offsets_request(
    group: str, topics: dict[str, list[int]] | None
) -> DescribeShareGroupOffsetsRequest:
    """DescribeShareGroupOffsets (API 90) of ``group``: the partitions of ``topics`` (name ->
    partition indexes), or every topic the group has offsets for when ``None``."""
    req = DescribeShareGroupOffsetsRequest
    named = None
    if topics is not None:
        named = [
            req.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
            for t, ps in topics.items()
        ]
    return req(groups=[req.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=named)])


def alter_offsets_request(
    group: str, offsets: dict[str, dict[int, int]]
) -> AlterShareGroupOffsetsRequest:
    """AlterShareGroupOffsets (API 91) of ``group``: topic name -> {partition: start offset}."""
    req = AlterShareGroupOffsetsRequest
    return req(
        group_id=group,
        topics=[
            req.AlterShareGroupOffsetsRequestTopic(
                topic_name=t,
                partitions=[
                    req.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                    for p, o in ps.items()
                ],
            )
            for t, ps in offsets.items()
        ],
    )


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=60)


def produce(bootstrap: str, topic: str, values: Iterable[bytes], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, partition=i % partitions)
    assert producer.flush(60) == 0


def share_consumer(bootstrap: str, group: str, topic: str, **extra: Any) -> ShareConsumer:
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": 5,
        **extra,
    }
    consumer = ShareConsumer(conf)
    consumer.subscribe([topic])
    return consumer


def poll(consumer: ShareConsumer, timeout_s: float = 0.2) -> list[Message]:
    """One poll's records, probes left over from :func:`warm_up` ACCEPTed and dropped."""
    out = []
    for m in consumer.poll(timeout_s):
        assert m.error() is None, m.error()
        if m.value() == PROBE:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        else:
            out.append(m)
    return out


def warm_up(
    consumers: Sequence[ShareConsumer],
    bootstrap: str,
    topic: str,
    partitions: int,
    timeout_s: float = 90.0,
) -> None:
    """Produce probes until every partition delivered one to some consumer (ACCEPTed)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    last_probe = 0.0
    while len(seen) < partitions:
        assert time.monotonic() < deadline, f"probes seen from partitions {sorted(seen)}"
        if time.monotonic() - last_probe > 1.0:
            for p in range(partitions):
                if p not in seen:
                    producer.produce(topic, value=PROBE, partition=p)
            producer.flush(30)
            last_probe = time.monotonic()
        for consumer in consumers:
            msgs = [m for m in consumer.poll(0.1) if m.error() is None]
            for m in msgs:
                assert m.value() == PROBE, "a record was produced before the warm-up ended"
                seen.add(m.partition() or 0)
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            if msgs:
                consumer.commit_sync(30)


def close_all(consumers: Iterable[ShareConsumer]) -> None:
    for consumer in consumers:
        with contextlib.suppress(Exception):  # a test failing already says why
            consumer.close()
