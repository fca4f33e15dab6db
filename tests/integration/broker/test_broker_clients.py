"""Real clients against an embedded broker: confluent-kafka (librdkafka) and kafka-python."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from riverbed.testing.embedded import EmbeddedBroker

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def confluent_produce(bootstrap: str, topic: str, n: int, codec: str, **extra: object) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5, **extra}
    )
    errors: list[object] = []
    for i in range(n):
        producer.produce(
            topic,
            key=b"key-%d" % i,
            value=b"value-%d" % i,
            headers=[("h", b"%d" % i)],
            partition=i % 2,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    assert producer.flush(30) == 0
    assert errors == []


def confluent_consume(bootstrap: str, topic: str, n: int, partitions: int = 2) -> list[object]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "riverbed-test", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        got.append(msg)
    consumer.close()
    return got


def create(bootstrap: str, topic: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_produce_consume_every_codec(broker: EmbeddedBroker, codec: str) -> None:
    topic = f"cf-{codec}"
    create(broker.bootstrap_servers, topic)
    confluent_produce(broker.bootstrap_servers, topic, 200, codec, **{"enable.idempotence": True})
    msgs = confluent_consume(broker.bootstrap_servers, topic, 200)
    assert len(msgs) == 200
    by_key = {m.key(): m for m in msgs}  # type: ignore[attr-defined]
    sample = by_key[b"key-7"]
    assert sample.value() == b"value-7"  # type: ignore[attr-defined]
    assert sample.headers() == [("h", b"7")]  # type: ignore[attr-defined]
    assert sample.partition() == 1  # type: ignore[attr-defined]
    offsets = sorted(m.offset() for m in msgs if m.partition() == 0)  # type: ignore[attr-defined]
    assert offsets == list(range(100))


def test_confluent_seek(broker: EmbeddedBroker) -> None:
    create(broker.bootstrap_servers, "seek", 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(10):
        producer.produce("seek", value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "s",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition("seek", 0, 7)])
    deadline = time.monotonic() + 30
    msg = None
    while msg is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
    assert msg is not None and msg.offset() == 7 and msg.value() == b"7"
    consumer.close()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_produce_consume(broker: EmbeddedBroker, codec: str | None) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition

    topic = f"kp-{codec}"
    create(broker.bootstrap_servers, topic)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec)
    futures = [
        producer.send(
            topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")], partition=i % 2
        )
        for i in range(50)
    ]
    producer.flush(30)
    assert all(f.get(timeout=30).offset >= 0 for f in futures)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
    tps = [KTopicPartition(topic, p) for p in range(2)]
    consumer.assign(tps)
    consumer.seek(tps[1], 3)
    consumer.seek_to_beginning(tps[0])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 47 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    consumer.close()
    assert len(got) == 47  # 25 from partition 0, 22 from partition 1 (seeked to 3)
    assert {r.key for r in got if r.partition == 0} == {b"k%d" % i for i in range(0, 50, 2)}
    assert all(r.headers == [("h", b"x")] for r in got)


def test_admin_create_describe_alter_delete(broker: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic("adm", 2, 1, config={"retention.ms": "60000"})], validate_only=True
    )
    futures["adm"].result(30)
    assert "adm" not in admin.list_topics(timeout=10).topics
    admin.create_topics([NewTopic("adm", 2, 1, config={"retention.ms": "60000"})])["adm"].result(30)
    with pytest.raises(Exception, match="already exists"):
        admin.create_topics([NewTopic("adm", 2, 1)])["adm"].result(30)
    with pytest.raises(Exception, match=r"retention\.ms"):
        admin.create_topics([NewTopic("bad-cfg", 1, 1, config={"retention.ms": "x"})])[
            "bad-cfg"
        ].result(30)

    resource = ConfigResource(ConfigResource.Type.TOPIC, "adm")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == 1  # DYNAMIC_TOPIC_CONFIG
    assert configs["segment.bytes"].is_default

    incremental = ConfigResource(
        ConfigResource.Type.TOPIC,
        "adm",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([incremental])[incremental].result(30)
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["retention.ms"].value == "60000"

    admin.create_partitions([NewPartitions("adm", 4)])["adm"].result(30)
    assert len(admin.list_topics(timeout=10).topics["adm"].partitions) == 4

    broker_res = ConfigResource(ConfigResource.Type.BROKER, "1")
    broker_configs = admin.describe_configs([broker_res])[broker_res].result(30)
    assert broker_configs["num.partitions"].value == "1"

    admin.delete_topics(["adm"])["adm"].result(30)
    assert "adm" not in admin.list_topics(timeout=10).topics


def test_idempotent_producer_and_restart_keeps_data(tmp_path: Path) -> None:
    with EmbeddedBroker(tmp_path / "d") as b:
        create(b.bootstrap_servers, "durable")
        confluent_produce(
            b.bootstrap_servers,
            "durable",
            100,
            "none",
            **{"enable.idempotence": True, "acks": "all"},
        )
        b.restart()
        msgs = confluent_consume(b.bootstrap_servers, "durable", 100)
        assert len(msgs) == 100
        confluent_produce(b.bootstrap_servers, "durable", 10, "lz4", **{"enable.idempotence": True})
        assert len(confluent_consume(b.bootstrap_servers, "durable", 110)) == 110
