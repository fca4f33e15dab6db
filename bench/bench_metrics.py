"""Produce throughput of a broker process with metrics off and on (issue 14).

    .venv/bin/python bench/bench_metrics.py [--messages 1000000] [--size 100] [--trials 5]
        [--linger-ms 5] [--scrape-interval 1.0]
    .venv/bin/python bench/bench_metrics.py --wire [--requests 20000] [--records-per-request 10]

Each trial starts a fresh ``riverbed broker`` child (so the broker has its own
interpreter and GIL), alternating ``--metrics-listen`` off and on, creates a one-partition
topic and produces ``--messages`` records with confluent-kafka (acks=all, durable: one
group commit per produce round).  With metrics on, a thread scrapes ``/metrics`` every
``--scrape-interval`` seconds during the run (Prometheus' default is 15 s: 1 s is
pessimistic).  Prints each trial, the median msg/s and broker CPU time per message
(user + system, from ``/proc``: steadier than throughput on a shared machine) of each
mode and their ratios, and the load average, which the field notes ask for: compare
within one run only.

``--wire`` measures the per-request cost directly instead: a raw connection sends a fixed
number of identical Produce requests (acks=1, 50 in flight) and the broker's CPU time per
request is compared, off against on (no scrapes: the request path alone).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.broker.metrics import BrokerMetrics
from riverbed.protocol.framing import RequestHeader, encode_request
from riverbed.protocol.messages import ProduceRequest, ProduceResponse
from riverbed.protocol.records import build_batch
from riverbed.testing.broker_process import BrokerProcess, free_port


def hook_cost_us(records_per_batch: int, calls: int = 50_000) -> float:
    """µs per ``BrokerMetrics.request_done`` for a one-partition Produce (the hot path)."""
    metrics = BrokerMetrics(lambda _topic_id: None)
    records = build_batch([(None, b"x" * 100, 0)] * records_per_batch)
    request = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="bench",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=records)],
            )
        ],
    )
    part = ProduceResponse.PartitionProduceResponse(index=0)
    response = ProduceResponse(
        responses=[ProduceResponse.TopicProduceResponse(name="bench", partition_responses=[part])]
    )
    header = RequestHeader(0, 11, 1, "bench")
    started = time.perf_counter()
    for _ in range(calls):
        metrics.request_done(header, request, response, started)
    return (time.perf_counter() - started) / calls * 1e6


def _scraper(port: int, interval_s: float, stop: threading.Event, count: list[int]) -> None:
    url = f"http://127.0.0.1:{port}/metrics"
    while not stop.wait(interval_s):
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
        count[0] += 1


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _produce_frames(count: int, records: int, size: int) -> list[bytes]:
    """``count`` Produce v9 requests (acks=1), each one batch of ``records`` records."""
    batch = build_batch([(None, b"x" * size, 0)] * records)
    request = ProduceRequest(
        acks=1,
        timeout_ms=30_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="bench",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    return [encode_request(RequestHeader(0, 9, i, "bench"), request) for i in range(count)]


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("broker closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def wire_trial(args: argparse.Namespace, metrics: bool) -> float:
    """The broker's CPU µs per Produce request, sent over one raw pipelined connection
    (a fixed number of requests of a fixed size: no client batching to vary)."""
    frames = _produce_frames(args.requests, args.records_per_request, args.size)
    config = {"metrics.listen": f"127.0.0.1:{free_port()}"} if metrics else {}
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(
            Path(tmp) / "data", free_port(), Path(tmp) / "broker.log", config=config
        )
        broker.start(timeout_s=300)
        try:
            admin = AdminClient(
                {"bootstrap.servers": broker.bootstrap_servers, "log.connection.close": False}
            )
            admin.create_topics([NewTopic("bench", 1, 1)])["bench"].result(60)
            with socket.create_connection(("127.0.0.1", broker.port), timeout=60) as sock:
                cpu_before = cpu_seconds(broker.pid)
                window = 50
                sent = received = 0
                while received < len(frames):
                    while sent < len(frames) and sent - received < window:
                        sock.sendall(frames[sent])
                        sent += 1
                    size = struct.unpack(">i", _recv_exactly(sock, 4))[0]
                    _recv_exactly(sock, size)
                    received += 1
                return (cpu_seconds(broker.pid) - cpu_before) / len(frames) * 1e6
        finally:
            broker.close()


def trial(args: argparse.Namespace, metrics: bool) -> tuple[float, float, int]:
    """msg/s of one produce run, the broker's CPU µs per message, and the scrapes made."""
    metrics_port = free_port()
    config = {"metrics.listen": f"127.0.0.1:{metrics_port}"} if metrics else {}
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(
            Path(tmp) / "data", free_port(), Path(tmp) / "broker.log", config=config
        )
        broker.start(timeout_s=300)
        try:
            bootstrap = broker.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bootstrap, "log.connection.close": False})
            admin.create_topics([NewTopic("bench", 1, 1)])["bench"].result(60)
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "log.connection.close": False,
                    "linger.ms": args.linger_ms,
                    "acks": "all",
                    "batch.size": 1_000_000,
                    "queue.buffering.max.messages": 2_000_000,
                }
            )
            payload = b"x" * args.size
            stop = threading.Event()
            scrapes = [0]
            scraper = None
            if metrics:
                scraper = threading.Thread(
                    target=_scraper, args=(metrics_port, args.scrape_interval, stop, scrapes)
                )
                scraper.start()
            cpu_before = cpu_seconds(broker.pid)
            started = time.perf_counter()
            for _ in range(args.messages):
                try:
                    producer.produce("bench", payload, partition=0)
                except BufferError:
                    producer.poll(0.01)
                    producer.produce("bench", payload, partition=0)
            assert producer.flush(300) == 0
            elapsed = time.perf_counter() - started
            cpu_us = (cpu_seconds(broker.pid) - cpu_before) / args.messages * 1e6
            stop.set()
            if scraper is not None:
                scraper.join()
            return args.messages / elapsed, cpu_us, scrapes[0]
        finally:
            broker.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--scrape-interval", type=float, default=1.0)
    parser.add_argument(
        "--wire",
        action="store_true",
        help="instead: broker CPU per Produce request over a raw pipelined connection",
    )
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--records-per-request", type=int, default=10)
    args = parser.parse_args()
    if args.wire:
        wire_main(args)
        return
    rates: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    print(f"load average before: {os.getloadavg()}")
    for n in (1, 1000):
        print(f"hook cost: {hook_cost_us(n):.2f} µs per Produce request ({n} records, 1 batch)")
    for i in range(args.trials):
        for metrics in (False, True) if i % 2 == 0 else (True, False):
            rate, cpu_us, scrapes = trial(args, metrics)
            rates[metrics].append(rate)
            cpu[metrics].append(cpu_us)
            mode = f"on ({scrapes} scrapes)" if metrics else "off"
            print(
                f"trial {i + 1} metrics {mode}: {rate:,.0f} msg/s, broker CPU {cpu_us:.2f} µs/msg",
                flush=True,
            )
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    print(
        f"median produce: metrics off {off:,.0f} msg/s, on {on:,.0f} msg/s "
        f"({(on / off - 1) * 100:+.1f}%; {args.size} B, linger.ms={args.linger_ms}, acks=all)"
    )
    cpu_off, cpu_on = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(
        f"median broker CPU: metrics off {cpu_off:.2f} µs/msg, on {cpu_on:.2f} µs/msg "
        f"({(cpu_on / cpu_off - 1) * 100:+.1f}%)"
    )
    print(f"load average after: {os.getloadavg()}")


def wire_main(args: argparse.Namespace) -> None:
    print(f"load average before: {os.getloadavg()}")
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for i in range(args.trials):
        for metrics in (False, True) if i % 2 == 0 else (True, False):
            cpu_us = wire_trial(args, metrics)
            cpu[metrics].append(cpu_us)
            mode = "on" if metrics else "off"
            print(f"trial {i + 1} metrics {mode}: broker CPU {cpu_us:.1f} µs/request", flush=True)
    off, on = statistics.median(cpu[False]), statistics.median(cpu[True])
    print(
        f"median broker CPU per Produce request ({args.records_per_request} x {args.size} B): "
        f"metrics off {off:.1f} µs, on {on:.1f} µs ({on - off:+.1f} µs, "
        f"{(on / off - 1) * 100:+.1f}%)"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
