"""Differential check against Apache Kafka 4.1.1: what a real Kafka writes to
``__transaction_state`` for a confluent-kafka transactional producer decodes with our
format code, re-encodes to the same bytes, and follows the same state/epoch sequence as
our coordinator driven through the same calls.

Starts its own reference broker (jars cached under ~/.cache/riverbed, see
:mod:`riverbed.testing.kafka_reference`); marked ``kafka``.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.coordinator.transactions import (
    TransactionCoordinatorConfig,
    TransactionMetadata,
    TransactionState,
)
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.coordinator.transactions.transaction_log import (
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    value_version_for,
)
from riverbed.protocol.topic_partition import TopicPartition as TP
from riverbed.testing.kafka_reference import KafkaReference, cache_dir, resolve_jars

pytestmark = pytest.mark.kafka
ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

TXN_PARTITIONS = 3  # the reference broker's transaction.state.log.num.partitions


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaReference]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    # scan for timed-out transactions every 200 ms instead of 10 s
    broker = KafkaReference(
        overrides={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
    ).start()
    try:
        yield broker
    finally:
        broker.stop()


def _transaction_log(bootstrap: str) -> list[tuple[bytes, bytes | None]]:
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = []
        for p in range(TXN_PARTITIONS):
            tp = ck.TopicPartition("__transaction_state", p)
            _, high = consumer.get_watermark_offsets(tp, timeout=10)
            if high > 0:
                ends.append((p, high))
        consumer.assign([ck.TopicPartition("__transaction_state", p, 0) for p, _ in ends])
        out: list[tuple[bytes, bytes | None]] = []
        want = sum(high for _, high in ends)
        seen = 0
        for _ in range(200):
            if seen >= want:
                break
            for msg in consumer.consume(100, timeout=0.5):
                if msg.error():
                    continue
                seen += 1
                out.append((msg.key(), msg.value()))
        return out
    finally:
        consumer.close()


def test_kafka_transaction_log_records_match_ours(kafka: KafkaReference) -> None:
    bootstrap = kafka.bootstrap_servers
    topic = f"txn-diff-{uuid.uuid4().hex[:8]}"
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([admin_mod.NewTopic(topic, 1, 1)])[topic].result(30)
    txn_id = f"txn-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 45_000,
        }
    )
    producer.init_transactions(30)
    for commit in (True, False):
        producer.begin_transaction()
        producer.produce(topic, b"v")
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    kafka_metas, value_version = _kafka_records(bootstrap, txn_id)

    # drive our coordinator through the same calls at the client's transaction version
    tv = max(m.client_transaction_version for m in kafka_metas)
    d = TransactionDriver(TransactionCoordinatorConfig(transaction_version=2))
    r = d.init(txn_id, timeout_ms=45_000)
    pid, epoch = r.producer_id, r.producer_epoch
    for commit in (True, False):
        d.add(txn_id, pid, epoch, TP(topic, 0), tv=tv)
        resp = d.end(txn_id, pid, epoch, commit, tv=tv)
        if resp.producer_id != -1:
            pid, epoch = resp.producer_id, resp.producer_epoch
        d.write_markers()
    assert _shape(_ours(d, txn_id)) == _shape(kafka_metas)
    assert kafka_metas[-1].state is TransactionState.COMPLETE_ABORT
    assert {value_version_for(2)} == value_version


def test_kafka_fences_a_zombie_as_we_do(kafka: KafkaReference) -> None:
    """A second instance's InitProducerId during the first one's transaction: Kafka aborts
    it with a bumped epoch (at the cluster's transaction version) before answering."""
    bootstrap = kafka.bootstrap_servers
    topic = f"txn-fence-{uuid.uuid4().hex[:8]}"
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([admin_mod.NewTopic(topic, 1, 1)])[topic].result(30)
    txn_id = f"zombie-{uuid.uuid4().hex[:8]}"
    conf = {
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 45_000,
    }
    zombie = ck.Producer(conf)
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, b"v")
    zombie.flush(30)
    ck.Producer(conf).init_transactions(60)
    kafka_metas, _ = _kafka_records(bootstrap, txn_id)
    states = [m.state for m in kafka_metas]
    assert states[:2] == [TransactionState.EMPTY, TransactionState.ONGOING]

    # our coordinator at the transaction version Kafka's abort record shows
    cluster_tv = next(
        m.client_transaction_version
        for m in kafka_metas
        if m.state is TransactionState.PREPARE_ABORT
    )
    d = TransactionDriver(TransactionCoordinatorConfig(transaction_version=max(cluster_tv, 1)))
    r = d.init(txn_id, timeout_ms=45_000)
    d.add(txn_id, r.producer_id, r.producer_epoch, TP(topic, 0))
    while d.init(txn_id, timeout_ms=45_000).error_code.name == "CONCURRENT_TRANSACTIONS":
        d.write_markers()
    assert _shape(_ours(d, txn_id)) == _shape(kafka_metas)


def test_kafka_java_producer_tv2_matches_ours(kafka: KafkaReference) -> None:
    """Kafka's own Java producer speaks transaction version 2 (EndTxn v5, partitions added
    by the partition leader): the epoch is bumped at every EndTxn, and AddOffsetsToTxn adds
    the group's ``__consumer_offsets`` partition."""
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("javac not on PATH")
    libs = resolve_jars()
    source = Path(__file__).parent / "java" / "TxnScenario.java"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    classes = cache_dir() / "java-classes" / f"txn-{digest}"
    if not (classes / "TxnScenario.class").exists():
        tmp = classes.with_name(classes.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        subprocess.run(
            [javac, "-d", str(tmp), "-cp", str(libs / "*"), str(source)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        shutil.rmtree(classes, ignore_errors=True)
        tmp.rename(classes)
    bootstrap = kafka.bootstrap_servers
    topic = f"txn-java-{uuid.uuid4().hex[:8]}"
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([admin_mod.NewTopic(topic, 1, 1)])[topic].result(30)
    txn_id, group = f"java-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{classes}:{libs / '*'}",
            "TxnScenario",
            bootstrap,
            topic,
            txn_id,
            group,
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-4000:]
    kafka_metas, _ = _kafka_records(bootstrap, txn_id)

    d = TransactionDriver(TransactionCoordinatorConfig(offsets_topic_num_partitions=3))
    r = d.init(txn_id, timeout_ms=45_000)
    pid, epoch = r.producer_id, r.producer_epoch
    for commit in (True, False):
        d.add(txn_id, pid, epoch, TP(topic, 0), tv=2)  # the partition leader's implicit add
        if commit:
            d.add_offsets(txn_id, pid, epoch, group)
        resp = d.end(txn_id, pid, epoch, commit, tv=2)
        pid, epoch = resp.producer_id, resp.producer_epoch
        d.write_markers()
    assert _shape(_ours(d, txn_id)) == _shape(kafka_metas)


def test_kafka_times_out_a_transaction_as_we_do(kafka: KafkaReference) -> None:
    bootstrap = kafka.bootstrap_servers
    topic = f"txn-timeout-{uuid.uuid4().hex[:8]}"
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([admin_mod.NewTopic(topic, 1, 1)])[topic].result(30)
    txn_id = f"slow-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 1000}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"v")
    producer.flush(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kafka_metas, _ = _kafka_records(bootstrap, txn_id)
        if kafka_metas[-1].state is TransactionState.COMPLETE_ABORT:
            break
        time.sleep(0.3)
    cluster_tv = kafka_metas[-1].client_transaction_version

    d = TransactionDriver(TransactionCoordinatorConfig(transaction_version=max(cluster_tv, 1)))
    r = d.init(txn_id, timeout_ms=1000)
    d.add(txn_id, r.producer_id, r.producer_epoch, TP(topic, 0))
    d.advance(1001)
    d.tick()
    d.write_markers()
    assert _shape(_ours(d, txn_id)) == _shape(kafka_metas)


def test_kafka_refuses_a_timeout_above_the_maximum_and_writes_nothing(
    kafka: KafkaReference,
) -> None:
    txn_id = f"long-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 900_001,
        }
    )
    with pytest.raises(ck.KafkaException) as info:
        producer.init_transactions(30)
    assert info.value.args[0].code() == ck.KafkaError.INVALID_TRANSACTION_TIMEOUT
    assert [
        k for k, _ in _transaction_log(kafka.bootstrap_servers) if decode_key(k) == txn_id
    ] == []
    d = TransactionDriver()
    assert d.init(txn_id, timeout_ms=900_001).error_code.name == "INVALID_TRANSACTION_TIMEOUT"
    assert d.log == []


def _kafka_records(bootstrap: str, txn_id: str) -> tuple[list[TransactionMetadata], set[int]]:
    records = [(k, v) for k, v in _transaction_log(bootstrap) if decode_key(k) == txn_id]
    assert records, "Kafka wrote no __transaction_state record for the transactional id"
    metas, versions = [], set()
    for key, value in records:
        assert key == encode_key(txn_id)
        assert value is not None
        meta = decode_value(txn_id, value)
        version = int.from_bytes(value[:2], "big")
        versions.add(version)
        # our encoder, given what we decoded, writes Kafka's bytes back (we sort partitions,
        # Kafka writes its hash map's order: compare bytes where there is one topic)
        ours = encode_value(meta, version)
        if len({tp.topic for tp in meta.partitions}) <= 1:
            assert ours == value
        else:
            assert len(ours) == len(value)
            assert decode_value(txn_id, ours).persisted() == meta.persisted()
        metas.append(meta)
    return metas, versions


def _ours(d: TransactionDriver, txn_id: str) -> list[TransactionMetadata]:
    return [decode_value(txn_id, rec.value) for rec in d.log if rec.value is not None]


def _shape(metas: list[TransactionMetadata]) -> list[str]:
    """One readable line per record: state, epoch, timeout, partitions, client TV."""
    return [
        f"{m.state.wire_name} epoch={m.producer_epoch} timeout={m.timeout_ms} "
        f"partitions={sorted(m.partitions)} tv={m.client_transaction_version}"
        for m in metas
    ]
