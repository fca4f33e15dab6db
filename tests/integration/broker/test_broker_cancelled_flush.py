"""acks=-1 flush waits on the wire.

A client that disconnects while its acks=-1 produces wait for an fsync must not stall
the others (issue 15.1).

Closing a connection cancels its pending flush waits (``asyncio.wrap_future`` cancels
the log's ``concurrent.futures.Future``).  The flush that later covers them used to call
``set_result`` on the cancelled future, raise ``InvalidStateError`` and abandon every
other waiter, so produces on other connections were never answered.  Here connection A
pipelines acks=-1 produces and resets its socket (``SO_LINGER`` 0) while B produces to
the same partition; B must be answered within a deadline, round after round.

Two flush policies: the default per-append one (the issue's scenario; whether A's waits
are still pending when its reset lands depends on the disk) and an interval policy
(``flush.ms``), under which every acks=-1 wait lasts until the next interval flush, so
A's cancelled waits are certainly queued ahead of B's and the old code fails every round.

A retried acks=-1 batch (a duplicate of one the log holds) is answered only once the
fsync covering the original is done (issue 17.1), shown by holding that fsync at the
``segment.fsync`` failure point.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader, encode_request
from riverbed.protocol.messages import CreateTopicsRequest, ProduceRequest
from riverbed.protocol.records import build_batch
from riverbed.storage import faults
from riverbed.testing.embedded import EmbeddedBroker

Connect = Callable[[str], Any]

PRODUCE, CREATE_TOPICS = 0, 19
ROUNDS = 5
PIPELINED = 30
ANSWER_DEADLINE_S = 10.0


def create_topic(wire: Any, name: str, configs: dict[str, str] | None = None) -> None:
    resp = wire.call(
        CREATE_TOPICS,
        7,
        CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=name,
                    num_partitions=1,
                    replication_factor=1,
                    configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                        for k, v in (configs or {}).items()
                    ],
                )
            ],
            timeout_ms=1000,
        ),
    )
    assert resp.topics[0].error_code == ErrorCode.NONE, resp


def produce_request(topic: str, value: bytes, records: bytes | None = None) -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=0, records=records or build_batch([(None, value)])
                    )
                ],
            )
        ],
    )


def reset_after_pipelining(bootstrap: str, topic: str, round_no: int) -> None:
    """Connection A: send PIPELINED acks=-1 produces without reading, then RST."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    try:
        frames = b"".join(
            encode_request(
                RequestHeader(PRODUCE, 9, i + 1, "reset-client"),
                produce_request(topic, b"a-%d-%d" % (round_no, i)),
            )
            for i in range(PIPELINED)
        )
        sock.sendall(frames)
        # Give the broker a moment to read, append and start waiting on the flush.
        time.sleep(0.02)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        sock.close()  # SO_LINGER 0: the close is a reset


@pytest.mark.parametrize(
    "configs", [{}, {"flush.ms": "100", "flush.messages": "100000"}], ids=["per-append", "interval"]
)
def test_reset_client_does_not_stall_others(
    broker: EmbeddedBroker, connect: Connect, configs: dict[str, str]
) -> None:
    bootstrap = broker.bootstrap_servers
    b = connect(bootstrap)
    create_topic(b, "shared", configs)
    b.sock.settimeout(ANSWER_DEADLINE_S)
    for round_no in range(ROUNDS):
        reset_after_pipelining(bootstrap, "shared", round_no)
        # B's produce goes to the same partition while A's flush waits are being cancelled.
        for i in range(2):
            started = time.monotonic()
            try:
                answer = b.call(PRODUCE, 9, produce_request("shared", b"b-%d-%d" % (round_no, i)))
            except TimeoutError as exc:
                raise AssertionError(
                    f"round {round_no}: acks=-1 produce on another connection was not "
                    f"answered within {ANSWER_DEADLINE_S} s after a client reset"
                ) from exc
            part = answer.responses[0].partition_responses[0]
            assert part.error_code == ErrorCode.NONE, part
            assert time.monotonic() - started < ANSWER_DEADLINE_S


def test_duplicate_batch_waits_for_the_originals_fsync(
    broker: EmbeddedBroker, connect: Connect
) -> None:
    """Issue 17.1: the retry of an acks=-1 batch whose original is not yet fsynced must
    not be acknowledged before that fsync (it used to be answered at once)."""
    original, retry = connect(broker.bootstrap_servers), connect(broker.bootstrap_servers)
    create_topic(original, "idem")
    records = build_batch([(None, b"once")], producer_id=4242, producer_epoch=0, base_sequence=0)
    request = produce_request("idem", b"", records)
    with faults.inject("segment.fsync", block=True, match="idem-0") as fsync:
        cid = original.send(PRODUCE, 9, request)
        assert fsync.wait_reached(10), "the original's fsync never started"
        retry_cid = retry.send(PRODUCE, 9, request)  # the client's retry, on a new connection
        retry.sock.settimeout(1.0)
        try:
            early = retry.recv(PRODUCE, 9)
        except TimeoutError:
            early = None
        assert early is None, "duplicate acknowledged before the original's fsync completed"
        fsync.release()
        retry.sock.settimeout(ANSWER_DEADLINE_S)
        got, dup = retry.recv(PRODUCE, 9)
        got_original, first = original.recv(PRODUCE, 9)
    assert (got, got_original) == (retry_cid, cid)
    first_part = first.responses[0].partition_responses[0]
    dup_part = dup.responses[0].partition_responses[0]
    assert first_part.error_code == dup_part.error_code == ErrorCode.NONE
    assert dup_part.base_offset == first_part.base_offset == 0
    # written once
    again = original.call(PRODUCE, 9, produce_request("idem", b"next"))
    assert again.responses[0].partition_responses[0].base_offset == 1
