"""The race behind franz-go's TestTxnEtl, reproduced on the wire (transaction version 2).

EndTxn v5 answers once PrepareCommit is durable, with the bumped epoch, before the
COMMIT markers are written.  A producer that at once ends its *next* transaction (franz-go
aborts an empty transaction after a rebalance or at shutdown) sends EndTxn at that new
epoch while the coordinator is still PrepareCommit.  Kafka 4.1 fences it
(PRODUCER_FENCED, fatal); Riverbed answers CONCURRENT_TRANSACTIONS, which every client
retries, and the retry succeeds once the markers are written.

The two EndTxn requests go out in one write: the broker dispatches pipelined frames
synchronously, in order, so the second is handled before the marker task runs -- the race
every time, without sleeps.  The same pipelining shows that a transaction version 1
client (librdkafka) beginning its next transaction at once (AddPartitionsToTxn v3 right
behind EndTxn) is answered only after the markers, with success, not
CONCURRENT_TRANSACTIONS and a client backoff.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader, decode_response, encode_request
from riverbed.protocol.messages import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from riverbed.testing.embedded import EmbeddedBroker

INIT_PRODUCER_ID, ADD_PARTITIONS, END_TXN, TXN_OFFSET_COMMIT = 22, 24, 26, 28
TXN_ID, GROUP, TOPIC = "etl-race", "etl-race-group", "etl-race-in"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data") as embedded:
        yield embedded


class _Wire:
    """One connection; requests may be pipelined (:meth:`send_all`, then :meth:`receive`)."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)), timeout=30)
        self._next = 0
        self._sent: list[tuple[int, int, int]] = []

    def frame(self, api_key: int, version: int, request: Any) -> bytes:
        self._next += 1
        self._sent.append((self._next, api_key, version))
        return encode_request(RequestHeader(api_key, version, self._next, "eos-race"), request)

    def send_all(self, *frames: bytes) -> None:
        self._sock.sendall(b"".join(frames))

    def receive(self) -> Any:
        correlation_id, api_key, version = self._sent.pop(0)
        size = struct.unpack(">i", self._exactly(4))[0]
        cid, response = decode_response(self._exactly(size), api_key, version)
        assert cid == correlation_id
        return response

    def call(self, api_key: int, version: int, request: Any) -> Any:
        self.send_all(self.frame(api_key, version, request))
        return self.receive()

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by broker")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self._sock.close()


def _end(pid: int, epoch: int, commit: bool) -> EndTxnRequest:
    return EndTxnRequest(
        transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch, committed=commit
    )


def _offset_commit(pid: int, epoch: int, offset: int) -> TxnOffsetCommitRequest:
    partition = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=""
    )
    return TxnOffsetCommitRequest(
        transactional_id=TXN_ID,
        group_id=GROUP,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                name=TOPIC, topic_id=uuid.UUID(int=0), partitions=[partition]
            )
        ],
    )


def _until_not(code: int, attempt: Any, deadline_s: float = 30.0) -> Any:
    """Call ``attempt()`` until its response's error code is not ``code`` (retriable)."""
    deadline = time.monotonic() + deadline_s
    while True:
        response = attempt()
        if response.error_code != code or time.monotonic() > deadline:
            return response
        time.sleep(0.01)


def _committed_offset(bootstrap: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": GROUP, "isolation.level": "read_committed"}
    )
    try:
        [tp] = consumer.committed([TopicPartition(TOPIC, 0)], timeout=30)
        return int(tp.offset)
    finally:
        consumer.close()


def test_next_transaction_ending_before_the_commit_markers_waits(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=60)
    wire = _Wire(bootstrap)
    try:
        init = _until_not(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            lambda: wire.call(
                INIT_PRODUCER_ID,
                5,
                InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=60_000),
            ),
        )
        assert init.error_code == ErrorCode.NONE
        pid, epoch = init.producer_id, init.producer_epoch
        for round_, offset in enumerate((5, 9, 12)):
            # TxnOffsetCommit v5 adds the group's partition: the commit needs a marker.
            committed = _until_not(
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                lambda o=offset, e=epoch: _PartitionCode(  # type: ignore[misc]
                    wire.call(TXN_OFFSET_COMMIT, 5, _offset_commit(pid, e, o))
                ),
            )
            assert committed.error_code == ErrorCode.NONE, round_
            # EndTxn(commit) and, pipelined behind it, the next transaction's EndTxn(abort)
            # at the epoch the commit is about to return: PrepareCommit is not complete.
            wire.send_all(
                wire.frame(END_TXN, 5, _end(pid, epoch, commit=True)),
                wire.frame(END_TXN, 5, _end(pid, epoch + 1, commit=False)),
            )
            commit, early_abort = wire.receive(), wire.receive()
            assert (commit.error_code, commit.producer_id, commit.producer_epoch) == (
                ErrorCode.NONE,
                pid,
                epoch + 1,
            )
            assert early_abort.error_code in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NONE), (
                f"round {round_}: {ErrorCode(early_abort.error_code).name}"
            )
            epoch += 1
            if early_abort.error_code == ErrorCode.CONCURRENT_TRANSACTIONS:
                # the client's retry, once the markers are written: an abort of nothing
                early_abort = _until_not(
                    ErrorCode.CONCURRENT_TRANSACTIONS,
                    lambda e=epoch: wire.call(END_TXN, 5, _end(pid, e, commit=False)),
                )
            assert (early_abort.error_code, early_abort.producer_epoch) == (
                ErrorCode.NONE,
                epoch + 1,
            )
            epoch += 1
            # the commit stood: its offset is what the group reads
            assert _committed_offset(bootstrap) == offset
    finally:
        wire.close()


class _PartitionCode:
    """A TxnOffsetCommit response seen through its one partition's code."""

    def __init__(self, response: Any) -> None:
        self.error_code = int(response.topics[0].partitions[0].error_code)


def _add_partition(pid: int, epoch: int) -> AddPartitionsToTxnRequest:
    return AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TXN_ID,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[
            AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])
        ],
    )


def test_next_add_partitions_waits_for_the_markers(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=60)
    wire = _Wire(bootstrap)
    try:
        init = _until_not(
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            lambda: wire.call(
                INIT_PRODUCER_ID,
                4,
                InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=60_000),
            ),
        )
        pid, epoch = init.producer_id, init.producer_epoch
        added = wire.call(ADD_PARTITIONS, 3, _add_partition(pid, epoch))
        assert (
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        )
        for round_ in range(3):
            wire.send_all(
                wire.frame(END_TXN, 3, _end(pid, epoch, commit=True)),
                wire.frame(ADD_PARTITIONS, 3, _add_partition(pid, epoch)),
            )
            commit, next_add = wire.receive(), wire.receive()
            assert commit.error_code == ErrorCode.NONE, round_
            [topic] = next_add.results_by_topic_v3_and_below
            code = topic.results_by_partition[0].partition_error_code
            assert code == ErrorCode.NONE, f"round {round_}: {ErrorCode(code).name}"
    finally:
        wire.close()
