"""Apache Kafka 4.4's own ``__share_group_state`` records decode and replay with ours.

A confluent-kafka ShareConsumer reads 30 records from Kafka 4.4.0 (share groups on) and
acknowledges them: offsets 0-9 ACCEPT, 10-11 REJECT, 12-14 RELEASE, 15-29 ACCEPT.  Then a
plain consumer reads ``__share_group_state`` (3 partitions), every record is decoded
by :mod:`riverbed.share.share_state_records` and replayed by
:mod:`riverbed.share.share_state_log`; the share partition restored from Kafka's bytes
starts at 12, offers 12-14 again and holds 15-29 as acknowledged: the formats and the
replay rule are Kafka's, and the records sit in the partition
:func:`~riverbed.share.share_state_records.state_partition_for` names.  (Kafka writes its
first snapshot with start offset -1, "not yet initialised", and its updates carry the
start offset from before their own change.)

Needs java and mvn (Kafka's jars come from Maven Central, cached in ~/.cache/riverbed);
marked ``kafka``.  Run alone with
``.venv/bin/python -m pytest -q -p no:cacheprovider tests/integration/share_state -m kafka``.
"""

from __future__ import annotations

import shutil
import time
from typing import Any

import pytest

from riverbed.share import (
    RecordState,
    SharePartition,
    SharePartitionConfig,
    ShareStateRecord,
    decode_share_state_record,
)
from riverbed.share.share_state_log import ShareStateReplay
from riverbed.share.share_state_records import state_partition_for
from riverbed.testing.kafka_share_reference import create_topic, set_share_group_config, share_kafka

pytestmark = pytest.mark.kafka

TOPIC = "share-compat"
GROUP = "share-compat-group"
RECORDS = 30
STATE_PARTITIONS = 3


def ack_type_for(offset: int) -> str:
    if 10 <= offset <= 11:
        return "REJECT"
    if 12 <= offset <= 14:
        return "RELEASE"
    return "ACCEPT"


def read_state_topic(
    bootstrap: str, partition: int, timeout_s: float = 60.0
) -> list[tuple[bytes, bytes | None]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer: Any = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "share-compat-reader",
            "enable.auto.commit": False,
        }
    )
    try:
        tp = TopicPartition("__share_group_state", partition, 0)
        _low, high = consumer.get_watermark_offsets(tp, timeout=timeout_s)
        consumer.assign([tp])
        out: list[tuple[bytes, bytes | None]] = []
        deadline = time.monotonic() + timeout_s
        position = 0
        while position < high and time.monotonic() < deadline:
            m = consumer.poll(1.0)
            if m is None or m.error() is not None:
                continue
            out.append((m.key(), m.value()))
            position = m.offset() + 1
        assert position >= high, f"read {position} of {high} state records"
        return out
    finally:
        consumer.close()


def test_kafka_share_state_records_replay_with_ours() -> None:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

    overrides = {"share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS)}
    with share_kafka(lock_duration_ms=15_000, overrides=overrides) as kafka:
        bootstrap = kafka.bootstrap_servers
        create_topic(bootstrap, TOPIC, partitions=1)
        producer: Any = Producer({"bootstrap.servers": bootstrap})
        for i in range(RECORDS):
            producer.produce(TOPIC, value=f"v{i}".encode(), partition=0)
        assert producer.flush(60) == 0
        set_share_group_config(bootstrap, GROUP, {"share.auto.offset.reset": "earliest"})

        consumer: Any = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "share.acknowledgement.mode": "explicit",
            }
        )
        consumer.subscribe([TOPIC])
        seen: set[int] = set()
        deadline = time.monotonic() + 120
        try:
            while len(seen) < RECORDS and time.monotonic() < deadline:
                for m in consumer.poll(1.0):
                    if m.error() is not None or m.offset() in seen:
                        continue
                    seen.add(m.offset())
                    consumer.acknowledge(m, getattr(AcknowledgeType, ack_type_for(m.offset())))
            consumer.commit_sync(30.0)
        finally:
            consumer.close()
        assert len(seen) == RECORDS

        replay = ShareStateReplay()
        wanted: ShareStateRecord | None = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            replay = ShareStateReplay()
            for partition in range(STATE_PARTITIONS):
                for key, value in read_state_topic(bootstrap, partition):
                    record = decode_share_state_record(key, value)  # every record decodes
                    replay.apply(record)
                    if isinstance(record, ShareStateRecord) and record.key.group_id == GROUP:
                        wanted = record
                        assert state_partition_for(record.key, STATE_PARTITIONS) == partition
            states = [s for k, s in replay.states().items() if k.group_id == GROUP]
            if states and states[0].state_batches and states[0].state_batches[-1].last_offset >= 29:
                break  # the acknowledgements are written
            time.sleep(1.0)

    assert wanted is not None, "Kafka wrote no share state for the group"
    (persisted,) = (s for k, s in replay.states().items() if k.group_id == GROUP)
    # Kafka writes the start offset it had *before* the write it is part of (it moves its
    # SPSO once the write is done), so the final prefix 0-11 is still in the records and
    # the restore moves past it.
    assert 0 <= persisted.start_offset <= 12
    sp, _ = SharePartition.restore(persisted, SharePartitionConfig(), 0)
    assert sp.start_offset == 12
    for offset in range(12, 15):
        state = sp.state_of(offset)
        assert state is not None and state[0] is RecordState.AVAILABLE and state[1] >= 1
    for offset in range(15, RECORDS):
        state = sp.state_of(offset)
        assert state is None or state[0] is RecordState.ACKNOWLEDGED
    assert sp.next_fetch_offset() == 12
