"""A transaction version 2 Produce sent while the previous transaction's markers are being
written waits for them instead of answering NOT_ENOUGH_REPLICAS (issue 16).

A Java producer (TV2) sends its next transaction's first batch right after EndTxn; Kafka's
partition leader retries the implicit AddPartitionsToTxn until the coordinator has
completed the commit, so the client never sees the busy coordinator.  Riverbed answered
NOT_ENOUGH_REPLICAS at once, which costs the client ``retry.backoff.ms`` (100 ms).

EndTxn v5 and the Produce v12 behind it go out in one write: the broker dispatches
pipelined frames synchronously, in order, so the Produce is verified while the coordinator
is still PrepareCommit -- the race every time, without sleeps.  Two batches pipelined
behind EndTxn must also keep their sequence order (the waiting Produce holds the frames
behind it).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.broker.handlers import produce
from riverbed.broker.transactions import ProduceVerdict
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import EndTxnRequest, InitProducerIdRequest, ProduceRequest
from riverbed.protocol.record_build import build_batch
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.wire import WireClient

PRODUCE, INIT_PRODUCER_ID, END_TXN = 0, 22, 26
TXN_ID, TOPIC = "markers-produce", "markers-produce-out"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data") as embedded:
        yield embedded


def _produce(pid: int, epoch: int, sequence: int, value: bytes) -> ProduceRequest:
    batch = build_batch(
        [(None, value)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=True,
    )
    return ProduceRequest(
        transactional_id=TXN_ID,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=TOPIC,
                topic_id=uuid.UUID(int=0),
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )


def _end(pid: int, epoch: int) -> EndTxnRequest:
    return EndTxnRequest(
        transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch, committed=True
    )


def _code(response: Any) -> ErrorCode:
    return ErrorCode(response.responses[0].partition_responses[0].error_code)


def _offset(response: Any) -> int:
    return int(response.responses[0].partition_responses[0].base_offset)


def _init(wire: WireClient) -> tuple[int, int]:
    deadline = time.monotonic() + 60
    while True:  # __transaction_state is created on first use
        init = wire.call(
            INIT_PRODUCER_ID,
            5,
            InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=60_000),
        )
        if init.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert init.error_code == ErrorCode.NONE
    return int(init.producer_id), int(init.producer_epoch)


def _committed_values(bootstrap: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "markers-produce-check",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < expected and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                values.append(bytes(msg.value() or b""))
    finally:
        consumer.close()
    return values


def test_next_transactions_first_produce_waits_for_the_commit_markers(
    broker: EmbeddedBroker,
) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=60)
    wire = WireClient(bootstrap, client_id="markers")
    try:
        pid, epoch = _init(wire)
        first = wire.call(PRODUCE, 12, _produce(pid, epoch, 0, b"r0-a"))
        assert _code(first) == ErrorCode.NONE
        expected = [b"r0-a"]
        for round_ in range(1, 4):
            # EndTxn(commit) answers with epoch + 1 once PrepareCommit is durable; the next
            # transaction's batches (sequence restarts at the new epoch) ride right behind.
            a, b = f"r{round_}-a".encode(), f"r{round_}-b".encode()
            requests = [
                (END_TXN, 5, _end(pid, epoch)),
                (PRODUCE, 12, _produce(pid, epoch + 1, 0, a)),
                (PRODUCE, 12, _produce(pid, epoch + 1, 1, b)),
            ]
            sent = wire.send_many(requests)
            replies = [wire.recv(api_key, version) for api_key, version, _ in requests]
            assert [cid for cid, _ in replies] == sent
            commit, produce_a, produce_b = (response for _, response in replies)
            assert (commit.error_code, commit.producer_epoch) == (ErrorCode.NONE, epoch + 1)
            assert (_code(produce_a), _code(produce_b)) == (ErrorCode.NONE, ErrorCode.NONE), (
                f"round {round_}: {_code(produce_a).name}, {_code(produce_b).name}"
            )
            assert _offset(produce_b) == _offset(produce_a) + 1, round_
            epoch += 1
            expected += [a, b]
        commit = wire.call(END_TXN, 5, _end(pid, epoch))
        assert commit.error_code == ErrorCode.NONE
    finally:
        wire.close()
    assert _committed_values(bootstrap, len(expected)) == expected


class _BusyForever:
    """Produce's view of a coordinator whose markers never complete."""

    def __init__(self) -> None:
        self.verified = 0
        self.waited: list[float] = []

    def verify_produce(self, *args: Any, **kwargs: Any) -> ProduceVerdict:
        self.verified += 1
        partitions = args[3]
        return ProduceVerdict(dict.fromkeys(partitions, ErrorCode.NOT_ENOUGH_REPLICAS))

    def preparing(self, transactional_id: str) -> bool:
        return True

    async def markers_done(self, transactional_id: str, timeout_s: float) -> None:
        self.waited.append(timeout_s)


class _Deps:
    def __init__(self) -> None:
        self.transactions = _BusyForever()
        self.topics: Any = None
        self.purgatory: Any = None


def test_the_wait_is_bounded_and_runs_once() -> None:
    """Markers still unwritten after the wait: the request is answered NOT_ENOUGH_REPLICAS
    (retriable), verified twice, having waited at most MARKERS_WAIT_S once."""
    from riverbed.broker.barrier import Barrier
    from riverbed.broker.context import RequestContext
    from riverbed.protocol.framing import RequestHeader as Header

    deps = _Deps()
    request = _produce(9, 1, 0, b"v")
    ctx = RequestContext(Header(PRODUCE, 12, 1, "t"))
    result = produce.handle(deps, ctx, request)  # type: ignore[arg-type]
    assert isinstance(result, Barrier)

    class _Log:
        def append(self, records: bytes) -> Any:  # never reached: refused before the append
            raise AssertionError("appended while the coordinator was busy")

    class _Topics:
        def partition_log(self, name: str, index: int) -> _Log:
            return _Log()

    deps.topics = _Topics()
    response = asyncio.run(_await(result.awaitable))
    assert _code(response) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert deps.transactions.verified == 2
    assert deps.transactions.waited == [produce.MARKERS_WAIT_S]


async def _await(awaitable: Any) -> Any:
    return await awaitable
