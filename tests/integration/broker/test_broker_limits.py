"""Resource limits at the connection layer: memory budgets and connection quotas.

Memory (issue 15.6) is measured on a real ``riverbed broker`` subprocess: its peak RSS
(``VmHWM``) may grow by at most :data:`RSS_GROWTH_BOUND` while raw sockets attack it —
20 connections each sending most of a large frame, or one client pipelining big fetches
and never reading — and a confluent-kafka producer and consumer must be served meanwhile.
Budgets are small so each test takes seconds; without the limits the same attacks grow
the broker by ~160 MiB and ~300 MiB respectively.
"""

from __future__ import annotations

import contextlib
import logging
import re
import resource
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from test_broker_wire import FETCH, create_topic, fetch_request

from riverbed.protocol.framing import RequestHeader, encode_request
from riverbed.protocol.messages import ApiVersionsRequest
from riverbed.testing.broker_process import CLI, BrokerProcess, free_port
from riverbed.testing.embedded import EmbeddedBroker

Connect = Callable[[str], Any]
MIB = 1 << 20
RSS_GROWTH_BOUND = 64 * MIB
DEADLINE_S = 30.0


def _vm(broker: BrokerProcess, field: str) -> int:
    """A ``/proc/PID/status`` size field (VmRSS, VmHWM: the peak) in bytes."""
    text = Path(f"/proc/{broker.pid}/status").read_text()
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    assert found is not None
    return int(found.group(1)) * 1024


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], BrokerProcess]]:
    started: list[BrokerProcess] = []

    def start(settings: dict[str, str]) -> BrokerProcess:
        n = len(started)
        broker = BrokerProcess(
            tmp_path / f"d{n}", free_port(), tmp_path / f"broker{n}.log", settings, "INFO"
        )
        started.append(broker)
        broker.start(timeout_s=DEADLINE_S)
        return broker

    yield start
    for broker in started:
        broker.close()


def _round_trip(bootstrap: str, topic: str, count: int = 10) -> None:
    """A well-behaved confluent-kafka producer and consumer, with deadlines."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i)
    assert producer.flush(DEADLINE_S) == 0, "produce not served"
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "g-" + uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert len(got) == count, "fetch not served"
    finally:
        consumer.close()


def _send_until_stalled(socks: list[socket.socket], payloads: list[bytes]) -> int:
    """Push each payload into its (non-blocking) socket until every one is sent or none
    has moved for a second; the bytes sent."""
    sent = [0] * len(socks)
    last_progress = time.monotonic()
    while time.monotonic() - last_progress < 1.0:
        moved = False
        for i, (sock, payload) in enumerate(zip(socks, payloads, strict=True)):
            if sent[i] < len(payload):
                with contextlib.suppress(BlockingIOError):
                    n = sock.send(payload[sent[i] : sent[i] + MIB])
                    sent[i] += n
                    moved = moved or n > 0
        if moved:
            last_progress = time.monotonic()
        elif all(s == len(p) for s, p in zip(sent, payloads, strict=True)):
            break
        else:
            time.sleep(0.01)
    return sum(sent)


def _connect_raw(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setblocking(False)
    return sock


def test_partial_frames_are_bounded_by_the_request_pool(
    start_broker: Callable[[dict[str, str]], BrokerProcess],
) -> None:
    frame = 8 * MIB
    broker = start_broker(
        {"socket.request.max.bytes": str(frame), "queued.max.request.bytes": str(frame)}
    )
    _round_trip(broker.bootstrap_servers, "warm-up")  # imports, clients, topics: the baseline
    baseline = _vm(broker, "VmRSS")
    socks = [_connect_raw(broker.bootstrap_servers) for _ in range(20)]
    try:
        # Every connection announces an 8 MiB frame and sends all of it but 64 KiB.
        payload = struct.pack(">i", frame) + b"\x00" * (frame - (64 << 10))
        sent = _send_until_stalled(socks, [payload] * len(socks))
        assert sent >= frame  # at least one frame's worth really reached the broker
        _round_trip(broker.bootstrap_servers, "served-meanwhile")
        growth = _vm(broker, "VmHWM") - baseline
        assert growth < RSS_GROWTH_BOUND, f"RSS grew {growth / MIB:.0f} MiB"
    finally:
        for sock in socks:
            sock.close()


def test_pipelined_fetches_are_bounded_by_the_response_budget(
    start_broker: Callable[[dict[str, str]], BrokerProcess], connect: Connect
) -> None:
    broker = start_broker(
        {
            "fetch.max.bytes": str(4 * MIB),
            "riverbed.max.queued.response.bytes.per.connection": str(2 * MIB),
        }
    )
    wire = connect(broker.bootstrap_servers)
    create_topic(wire, "big", 1)
    _fill(wire, "big", 8)
    _round_trip(broker.bootstrap_servers, "warm-up")
    baseline = _vm(broker, "VmRSS")
    greedy = _connect_raw(broker.bootstrap_servers)
    greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 10)  # never read
    try:
        request = fetch_request("big", 0)
        request.max_bytes = request.topics[0].partitions[0].partition_max_bytes = 64 * MIB
        frames = b"".join(
            encode_request(RequestHeader(FETCH, 12, cid, "greedy"), request) for cid in range(40)
        )
        _send_until_stalled([greedy], [frames])
        _round_trip(broker.bootstrap_servers, "served-meanwhile")
        time.sleep(0.5)  # let whatever the broker would buffer for the greedy one land
        growth = _vm(broker, "VmHWM") - baseline
        assert growth < RSS_GROWTH_BOUND, f"RSS grew {growth / MIB:.0f} MiB"
    finally:
        greedy.close()


def _fill(wire: Any, topic: str, megabytes: int) -> None:
    from test_broker_wire import PRODUCE, produce_request

    from riverbed.protocol.error_codes import ErrorCode
    from riverbed.protocol.records import SimpleRecord, build_batch

    value = bytes(range(250)) * 4000  # ~1 MB, under message.max.bytes
    for _ in range(megabytes):
        batch = build_batch([SimpleRecord(key=None, value=value)])
        resp = wire.call(PRODUCE, 9, produce_request(topic, batch))
        assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE


# -- connection quotas and idle timeout (issue 15.7) ----------------------------------


def _served(wire: Any) -> bool:
    try:
        return wire.call(18, 3, ApiVersionsRequest()).error_code == 0  # type: ignore[no-any-return]
    except (ConnectionError, OSError):
        return False


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_max_connections_refuses_with_a_log_line(
    tmp_path: Path, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="riverbed.broker.limits")
    with EmbeddedBroker(tmp_path / "d", {"max.connections": "3"}) as broker:
        first, *others = [connect(broker.bootstrap_servers) for _ in range(3)]
        assert all(_served(w) for w in [first, *others])
        refused = connect(broker.bootstrap_servers)
        assert refused.is_closed_by_peer()
        assert "max.connections (3) reached" in caplog.text
        first.close()
        _wait(lambda: broker.broker.quotas.total == 2, "the closed connection is released")
        assert _served(connect(broker.bootstrap_servers))


def test_max_connections_per_ip(
    tmp_path: Path, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="riverbed.broker.limits")
    with EmbeddedBroker(tmp_path / "d", {"max.connections.per.ip": "2"}) as broker:
        local = [connect(broker.bootstrap_servers) for _ in range(2)]
        assert all(_served(w) for w in local)
        assert connect(broker.bootstrap_servers).is_closed_by_peer()
        assert "max.connections.per.ip (2) reached" in caplog.text
        # Another client address still gets in (loopback accepts any 127.x source).
        other = socket.socket()
        other.settimeout(10)
        other.bind(("127.0.0.2", 0))
        other.connect(("127.0.0.1", broker.port))
        wire = connect(broker.bootstrap_servers)
        wire.sock.close()
        wire.sock = other
        assert _served(wire)


def test_idle_connections_are_closed(
    tmp_path: Path, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="riverbed.broker.server")
    with EmbeddedBroker(tmp_path / "d", {"connections.max.idle.ms": "300"}) as broker:
        silent = connect(broker.bootstrap_servers)
        busy = connect(broker.bootstrap_servers)
        started = time.monotonic()
        while time.monotonic() - started < 1.5:  # five idle periods, always busy
            assert _served(busy)
            time.sleep(0.05)
        assert silent.is_closed_by_peer()
        assert "idle for more than connections.max.idle.ms (300)" in caplog.text
        assert _served(busy)


def test_open_files_limit_is_raised_at_start(tmp_path: Path) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 512:
        pytest.skip(f"hard open-files limit {hard} leaves nothing to raise")

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))

    log_path = tmp_path / "broker.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [*CLI, "--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0"],
            stderr=log,
            preexec_fn=lower,
        )
    try:
        _wait(lambda: "open files limit" in log_path.read_text(), "the start-up log line")
        assert f"open files limit {hard} (soft limit raised from 512)" in log_path.read_text()
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        assert re.search(rf"Max open files\s+{hard}\s+{hard}", limits), limits
    finally:
        proc.kill()
        proc.wait()


def test_fetch_max_bytes_caps_every_response(tmp_path: Path, connect: Connect) -> None:
    with EmbeddedBroker(tmp_path / "d", {"fetch.max.bytes": str(MIB)}) as broker:
        wire = connect(broker.bootstrap_servers)
        create_topic(wire, "big", 1)
        _fill(wire, "big", 3)
        request = fetch_request("big", 0)
        request.max_bytes = request.topics[0].partitions[0].partition_max_bytes = 64 * MIB
        part = wire.call(FETCH, 12, request).responses[0].partitions[0]
        assert 0 < len(part.records) <= MIB  # one ~1 MB batch of the three


def test_pipelined_fetches_under_a_small_budget_all_arrive_in_order(
    tmp_path: Path, connect: Connect
) -> None:
    """The budget holds fetches back, never loses or reorders them: a client that does
    read gets every answer, as the broker resumes on each drained write buffer."""
    settings = {"riverbed.max.queued.response.bytes.per.connection": str(256 << 10)}
    with EmbeddedBroker(tmp_path / "d", settings) as broker:
        wire = connect(broker.bootstrap_servers)
        create_topic(wire, "big", 1)
        _fill(wire, "big", 4)
        sent = []
        for i in range(24):
            request = fetch_request("big", i % 4)
            request.max_bytes = request.topics[0].partitions[0].partition_max_bytes = 2 * MIB
            sent.append(wire.send(FETCH, 12, request))
        for cid in sent:
            got, resp = wire.recv(FETCH, 12)
            assert got == cid
            assert len(resp.responses[0].partitions[0].records) > 900_000


def test_a_connection_flood_at_the_fd_limit_is_refused_and_files_still_open(
    tmp_path: Path, connect: Connect
) -> None:
    """With 600 descriptors, 650 connections: the broker caps connections below its
    open-files limit, refuses the rest with a log line (not a silent accept failure),
    and still has descriptors for new partitions."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 600:
        pytest.skip(f"hard open-files limit {hard} is below the 600 this test sets")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (600, 600))

    log_path = tmp_path / "broker.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [*CLI, "--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0"],
            stderr=log,
            preexec_fn=limit,
        )
    try:
        _wait(lambda: "accepting at most" in log_path.read_text(), "the start-up log line")
        text = log_path.read_text()
        cap_found = re.search(r"accepting at most (\d+) connections", text)
        port_found = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
        assert cap_found is not None and port_found is not None, text
        cap = int(cap_found.group(1))
        assert 0 < cap < 600 - 150  # the segment fd cache keeps a quarter
        bootstrap = f"127.0.0.1:{port_found.group(1)}"
        flood = [connect(bootstrap) for _ in range(650)]
        served = [w for w in flood if _served(w)]
        assert len(served) == cap
        assert f"max.connections ({cap}) reached" in log_path.read_text()
        # Flooded, the broker still opens files: a topic of 20 partitions, produced to.
        create_topic(served[0], "after-flood", 20)
        _fill(served[0], "after-flood", 1)
    finally:
        proc.kill()
        proc.wait()


def test_the_pool_is_fully_released_when_a_connection_closes(
    tmp_path: Path, connect: Connect
) -> None:
    """A connection holding several reservations (a long-poll fetch in flight, padded
    to 1.5 MB with trailing bytes Kafka ignores, and half of a 1.5 MB frame) gives every
    one of them back when it closes."""
    pad = 1_500_000
    with EmbeddedBroker(tmp_path / "d", {"queued.max.request.bytes": str(8 * MIB)}) as broker:
        wire = connect(broker.bootstrap_servers)
        create_topic(wire, "empty", 1)
        frame = encode_request(
            RequestHeader(FETCH, 12, 99, "t"), fetch_request("empty", 0, max_wait_ms=30_000)
        )
        wire.send_raw(struct.pack(">i", len(frame) - 4 + pad) + frame[4:] + b"\0" * pad)
        wire.send_raw(struct.pack(">i", pad) + b"\0" * 1000)

        async def pool(b: Any) -> tuple[int, int]:
            return b.request_pool.used, b.request_pool.large_used

        held = len(frame) - 4 + 2 * pad
        _wait(lambda: broker.call(pool) == (held, 0), "both frames reserved")
        wire.close()
        _wait(lambda: broker.call(pool) == (0, 0), "every reservation released")


@pytest.mark.slow
def test_the_issue_scenarios_with_default_settings(
    start_broker: Callable[[dict[str, str]], BrokerProcess], connect: Connect
) -> None:
    """Issue 15.6 as reported, default settings: 20 connections each sending 99 MiB of a
    100 MiB frame (2 GB of RSS before), then a client pipelining 40 fetches of up to
    64 MiB and never reading (2.6 GB before)."""
    broker = start_broker({})
    wire = connect(broker.bootstrap_servers)
    create_topic(wire, "big", 1)
    _fill(wire, "big", 64)
    _round_trip(broker.bootstrap_servers, "warm-up")
    baseline = _vm(broker, "VmRSS")
    socks = [_connect_raw(broker.bootstrap_servers) for _ in range(20)]
    greedy = _connect_raw(broker.bootstrap_servers)
    try:
        frame = 100 * MIB
        payload = struct.pack(">i", frame) + b"\0" * (99 * MIB)
        _send_until_stalled(socks, [payload] * len(socks))
        request = fetch_request("big", 0)
        request.max_bytes = request.topics[0].partitions[0].partition_max_bytes = 64 * MIB
        frames = b"".join(
            encode_request(RequestHeader(FETCH, 12, cid, "greedy"), request) for cid in range(40)
        )
        _send_until_stalled([greedy], [frames])
        _round_trip(broker.bootstrap_servers, "served-meanwhile")
        growth = _vm(broker, "VmHWM") - baseline
        # The pool (100 MiB: one large frame, alone) and one 55 MiB fetch response, which
        # the transport may hold a copy of: ~210 MiB measured; 4.6 GB without the limits.
        assert growth < 320 * MIB, f"RSS grew {growth / MIB:.0f} MiB"
    finally:
        for sock in [*socks, greedy]:
            sock.close()
