"""Differential check against Apache Kafka 4.1.1: the aborted-transaction index and the
control batches a real Kafka writes for a confluent-kafka transactional producer (two
open transactions interleaved, one committed, one aborted) are what our log writes for
the same batches and markers.

The data batches are taken from Kafka's own ``.log`` and appended to ours; each marker is
replayed with ``append_control_marker`` at the marker's timestamp.  Batches are compared
without the partition leader epoch (bytes 12-15: Kafka's leader stamps its epoch, 0; a
single-node Riverbed keeps the producer's -1), which the CRC does not cover.  Starts its
own reference broker (jars cached under ~/.cache/riverbed); marked ``kafka``.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.protocol.batch import BatchHeader, iter_batches
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.transactions import read_marker
from riverbed.testing.kafka_reference import KafkaReference

pytestmark = pytest.mark.kafka
ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaReference]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    broker = KafkaReference().start()
    try:
        yield broker
    finally:
        broker.stop()


class _SetClock:
    """A clock the test sets to each batch's timestamp."""

    def __init__(self) -> None:
        self.now = 0

    def now_ms(self) -> int:
        return self.now

    def monotonic_ms(self) -> int:
        return self.now


def _without_leader_epoch(raw: bytes) -> bytes:
    return raw[:12] + raw[16:]


def _wait_for(path: Path, size: int) -> bytes:
    for _ in range(100):
        if path.exists() and path.stat().st_size >= size:
            break
        time.sleep(0.1)
    return path.read_bytes()


def test_txnindex_and_markers_match_kafkas(kafka: KafkaReference, tmp_path: Path) -> None:
    bootstrap = kafka.bootstrap_servers
    topic = f"txn-log-{uuid.uuid4().hex[:8]}"
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([admin_mod.NewTopic(topic, 1, 1)])[topic].result(30)
    producers = []
    for name in ("a", "b"):
        p = ck.Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 0,
                "transactional.id": f"{name}-{uuid.uuid4().hex[:8]}",
            }
        )
        p.init_transactions(30)
        p.begin_transaction()
        producers.append(p)
    a, b = producers
    a.produce(topic, b"a1")
    a.flush(30)
    b.produce(topic, b"b1")
    b.flush(30)
    a.produce(topic, b"a2")
    a.flush(30)
    a.abort_transaction(30)  # b still open: Kafka's entry records LSO = b's first offset
    b.commit_transaction(30)

    directory = kafka.log_dir() / f"{topic}-0"
    kafka_log = _wait_for(directory / "00000000000000000000.log", 1)
    for _ in range(100):  # both markers on disk
        if sum(1 for _p, h in iter_batches(kafka_log) if h.is_control) == 2:
            break
        time.sleep(0.1)
        kafka_log = (directory / "00000000000000000000.log").read_bytes()
    kafka_index = _wait_for(directory / "00000000000000000000.txnindex", 34)

    clock = _SetClock()
    ours = PartitionLog.open(tmp_path / "t-0", LogConfig(), clock=clock)
    kafka_batches = []
    for pos, header in iter_batches(kafka_log):
        raw = kafka_log[pos : pos + header.size]
        kafka_batches.append(raw)
        if header.is_control:
            marker = read_marker(raw)
            clock.now = header.max_timestamp
            ours.append_control_marker(
                header.producer_id,
                header.producer_epoch,
                marker.is_commit,
                marker.coordinator_epoch,
            )
        else:
            clock.now = header.max_timestamp
            ours.append(raw)
    assert sum(1 for raw in kafka_batches if BatchHeader.parse(raw).is_control) == 2
    our_log = ours.read(0, 1 << 20).records
    our_batches = [our_log[pos : pos + h.size] for pos, h in iter_batches(our_log)]
    assert [_without_leader_epoch(r) for r in our_batches] == [
        _without_leader_epoch(r) for r in kafka_batches
    ]
    our_index = (tmp_path / "t-0" / "00000000000000000000.txnindex").read_bytes()
    assert our_index == kafka_index and len(our_index) == 34
    ours.close()
