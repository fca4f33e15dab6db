"""Stuck clients slow only themselves: many connections produce and fetch on time while
one client sits on half a frame and another pipelines big fetches and never reads."""

from __future__ import annotations

import contextlib
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from test_broker_wire import FETCH, PRODUCE, create_topic, fetch_request, produce_request

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader, encode_request
from riverbed.protocol.messages import FetchRequest
from riverbed.protocol.records import SimpleRecord, build_batch
from riverbed.testing.embedded import EmbeddedBroker

Wire = Any
Connect = Callable[[str], Any]

CLIENTS = 24
ROUNDS = 20
DEADLINE_S = 20.0


def _big_fetch(topic: str) -> FetchRequest:
    request = fetch_request(topic, 0)
    request.max_bytes = 4 << 20
    request.topics[0].partitions[0].partition_max_bytes = 4 << 20
    return request


def _fill(wire: Wire, topic: str, megabytes: int) -> None:
    value = bytes(range(250)) * 4000  # ~1 MB, under message.max.bytes
    for _ in range(megabytes):
        batch = build_batch([SimpleRecord(key=None, value=value)])
        resp = wire.call(PRODUCE, 9, produce_request(topic, batch))
        assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def _worker(connect: Connect, bootstrap: str, topic: str, n: int) -> float:
    """Produce ROUNDS records and fetch each back; the slowest round trip (s)."""
    wire = connect(bootstrap)
    slowest = 0.0
    for i in range(ROUNDS):
        started = time.monotonic()
        batch = build_batch([SimpleRecord(key=b"c%d" % n, value=b"r%d" % i)])
        resp = wire.call(PRODUCE, 9, produce_request(topic, batch, partition=n % 4))
        part = resp.responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.NONE
        fetched = (
            wire.call(FETCH, 12, fetch_request(topic, part.base_offset, partition=n % 4))
            .responses[0]
            .partitions[0]
        )
        assert fetched.error_code == ErrorCode.NONE and len(fetched.records) > 0
        slowest = max(slowest, time.monotonic() - started)
    return slowest


def test_stuck_clients_do_not_stall_others(broker: EmbeddedBroker, connect: Connect) -> None:
    bootstrap = broker.bootstrap_servers
    admin = connect(bootstrap)
    create_topic(admin, "busy", 4)
    create_topic(admin, "big", 1)
    _fill(admin, "big", 8)

    # Half a frame: a size prefix promising 1000 bytes, then 10 of them, then silence.
    half = connect(bootstrap)
    half.send_raw(struct.pack(">i", 1000) + b"\x00" * 10)
    # A reader that never reads: 64 pipelined 4 MiB fetches (its socket buffers fill, the
    # broker's write buffer passes the high-water mark, the broker stops reading from it).
    greedy = connect(bootstrap)
    greedy.sock.setblocking(False)
    frames = b"".join(
        encode_request(RequestHeader(FETCH, 12, cid, "greedy"), _big_fetch("big"))
        for cid in range(64)
    )
    with contextlib.suppress(BlockingIOError):  # what the socket takes is enough
        greedy.sock.send(frames)

    started = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(_worker, connect, bootstrap, "busy", n) for n in range(CLIENTS)]
        slowest = [f.result(timeout=DEADLINE_S) for f in futures]
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE_S, (elapsed, max(slowest))

    # Both stuck connections are still open: the broker waits for them, it does not
    # drop them (Kafka closes idle connections only after connections.max.idle.ms).
    # ... and the greedy one is held back: the broker stopped reading from it.
    count, paused = broker.call(_connections)
    assert count >= CLIENTS + 3
    assert paused >= 1


async def _connections(b: Any) -> tuple[int, int]:
    paused = sum(1 for c in b.connections if c._reading_paused)
    return len(b.connections), paused


def test_off_loop_fetch_serves_big_reads(broker: EmbeddedBroker, connect: Connect) -> None:
    """A fetch allowed more than OFF_LOOP_READ_BYTES reads on a worker thread and still
    answers in order with the other requests of its connection."""
    from riverbed.broker.handlers.fetch import OFF_LOOP_READ_BYTES, read_limit

    wire = connect(broker.bootstrap_servers)
    create_topic(wire, "big", 1)
    _fill(wire, "big", 3)
    request = _big_fetch("big")
    request.max_bytes = request.topics[0].partitions[0].partition_max_bytes = 16 << 20
    assert read_limit(request) > OFF_LOOP_READ_BYTES
    first = wire.send(FETCH, 12, request)
    second = wire.send(FETCH, 12, fetch_request("big", 2))
    got, resp = wire.recv(FETCH, 12)
    assert got == first
    part = resp.responses[0].partitions[0]
    assert part.error_code == ErrorCode.NONE and len(part.records) > 2_900_000
    assert part.high_watermark == 3
    got, _ = wire.recv(FETCH, 12)
    assert got == second
