"""Transaction version 2 (KIP-890): the producer epoch EndTxn bumps is the one the next
transaction uses; TxnOffsetCommit v5 at that epoch, sent at once (franz-go's TestTxnEtl),
is accepted once the previous transaction's markers are written and answers only the
retriable COORDINATOR_NOT_AVAILABLE until then -- not CONCURRENT_TRANSACTIONS, on which
franz-go aborts at the new epoch and is fenced by the still-PrepareCommit coordinator."""

from __future__ import annotations

import socket
import struct
import time
import uuid
from typing import Any

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader, decode_response, encode_request
from riverbed.protocol.messages import (
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from riverbed.testing.embedded import EmbeddedBroker

INIT_PRODUCER_ID, END_TXN, TXN_OFFSET_COMMIT = 22, 26, 28


class _Wire:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)), timeout=10)
        self._next = 0

    def call(self, api_key: int, version: int, request: Any) -> Any:
        self._next += 1
        header = RequestHeader(api_key, version, self._next, "tv2-epoch-test")
        self._sock.sendall(encode_request(header, request))
        size = struct.unpack(">i", self._exactly(4))[0]
        cid, response = decode_response(self._exactly(size), api_key, version)
        assert cid == self._next
        return response

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


def _commit_offsets(wire: _Wire, pid: int, epoch: int, offset: int) -> int:
    """The code once the previous transaction's markers are written: until then the
    answer is COORDINATOR_NOT_AVAILABLE, which clients retry (franz-go aborts on
    CONCURRENT_TRANSACTIONS, at an epoch the coordinator then fences)."""
    deadline = time.monotonic() + 10
    while True:
        code = _commit_offsets_once(wire, pid, epoch, offset)
        if code != ErrorCode.COORDINATOR_NOT_AVAILABLE or time.monotonic() > deadline:
            return code
        time.sleep(0.02)


def _commit_offsets_once(wire: _Wire, pid: int, epoch: int, offset: int) -> int:
    r = wire.call(
        TXN_OFFSET_COMMIT,
        5,
        TxnOffsetCommitRequest(
            transactional_id="etl",
            group_id="etl-group",
            producer_id=pid,
            producer_epoch=epoch,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(
                    name="__consumer_offsets",
                    topic_id=uuid.UUID(int=0),
                    partitions=[
                        TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=offset,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                    ],
                )
            ],
        ),
    )
    return int(r.topics[0].partitions[0].error_code)


def _end(wire: _Wire, pid: int, epoch: int) -> tuple[int, int]:
    r = wire.call(
        END_TXN,
        5,
        EndTxnRequest(
            transactional_id="etl", producer_id=pid, producer_epoch=epoch, committed=True
        ),
    )
    assert r.error_code == ErrorCode.NONE
    return int(r.producer_id), int(r.producer_epoch)


def test_txn_offset_commit_v5_accepts_the_epoch_end_txn_returned(broker: EmbeddedBroker) -> None:
    wire = _Wire(broker.bootstrap_servers)
    try:
        init = wire.call(
            INIT_PRODUCER_ID,
            5,
            InitProducerIdRequest(transactional_id="etl", transaction_timeout_ms=60_000),
        )
        assert init.error_code == ErrorCode.NONE
        pid, epoch = init.producer_id, init.producer_epoch
        for offset in (1, 2, 3):
            assert _commit_offsets(wire, pid, epoch, offset) == ErrorCode.NONE
            new_pid, new_epoch = _end(wire, pid, epoch)
            assert (new_pid, new_epoch) == (pid, epoch + 1)
            epoch = new_epoch
    finally:
        wire.close()
