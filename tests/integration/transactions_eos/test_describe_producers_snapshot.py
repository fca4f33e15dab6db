"""DescribeProducers reads a consistent copy of each partition's producer state, taken
under the log's lock (:meth:`PartitionLog.producer_states`), never the live map: answers
stay right while a transactional producer appends and its markers land, and what the
handler holds cannot change under it."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader, decode_response, encode_request
from riverbed.protocol.messages import DescribeProducersRequest
from riverbed.testing.embedded import EmbeddedBroker

DESCRIBE_PRODUCERS = 61
TOPIC = "described"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data") as embedded:
        yield embedded


def _describe(bootstrap: str) -> Any:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        request = DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name=TOPIC, partition_indexes=[0])]
        )
        sock.sendall(encode_request(RequestHeader(DESCRIBE_PRODUCERS, 0, 1, "dp"), request))
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, "closed by broker"
            buf += chunk
        _cid, response = decode_response(buf[4:], DESCRIBE_PRODUCERS, 0)
    [topic] = response.topics
    [partition] = topic.partitions
    assert partition.error_code == ErrorCode.NONE
    return partition


def _create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=60)


def test_describe_producers_while_transactions_commit(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create_topic(bootstrap)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "dp-1", "linger.ms": 1}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(TOPIC, b"open")
    producer.flush(60)
    [open_txn] = _describe(bootstrap).active_producers
    assert open_txn.current_txn_start_offset == 0
    producer.commit_transaction(60)
    [closed] = _describe(bootstrap).active_producers
    assert closed.producer_id == open_txn.producer_id and closed.current_txn_start_offset == -1

    # many transactions committing while DescribeProducers is asked again and again
    stop = threading.Event()
    errors: list[BaseException] = []

    def describe_loop() -> None:
        try:
            while not stop.is_set():
                for p in _describe(bootstrap).active_producers:
                    assert p.current_txn_start_offset >= -1 and p.producer_epoch >= 0
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=describe_loop)
    reader.start()
    try:
        for i in range(20):
            producer.begin_transaction()
            producer.produce(TOPIC, f"v{i}".encode())
            producer.commit_transaction(60)
    finally:
        stop.set()
        reader.join(60)
    assert not errors, errors[0]
    [last] = _describe(bootstrap).active_producers
    assert last.current_txn_start_offset == -1


def test_producer_states_are_copies(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce(TOPIC, b"x")
    assert producer.flush(60) == 0
    plog = broker.broker.topics.partition_log(TOPIC, 0)
    [copy] = plog.producer_states()
    copy.producer_epoch += 7
    copy.batches.clear()
    [again] = plog.producer_states()
    assert again.producer_epoch == copy.producer_epoch - 7 and again.batches
