"""kafka-python's transactional producer (InitProducerId v4, AddPartitionsToTxn, EndTxn)
and read_committed consumer against an embedded broker: a committed and an aborted
transaction, seen per isolation level."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from riverbed.testing.embedded import EmbeddedBroker


def _read(bootstrap: str, isolation: str, expect: int) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation,
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    consumer.assign([TopicPartition("kp", p) for p in range(2)])
    consumer.seek_to_beginning()
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < expect and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [r.value for r in records]
    # a little longer: nothing more may arrive
    for records in consumer.poll(timeout_ms=1000).values():
        got += [r.value for r in records]
    consumer.close()
    return sorted(got)


def test_kafka_python_commit_and_abort(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("kp", 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-tx")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(4):
        producer.send("kp", value=b"c%d" % i, partition=i % 2)
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(2):
        producer.send("kp", value=b"a%d" % i, partition=i % 2)
    producer.flush()  # written before the abort (unsent batches would just be dropped)
    producer.abort_transaction()
    producer.close()
    assert _read(bootstrap, "read_committed", 4) == [b"c0", b"c1", b"c2", b"c3"]
    assert _read(bootstrap, "read_uncommitted", 6) == [b"a0", b"a1", b"c0", b"c1", b"c2", b"c3"]
