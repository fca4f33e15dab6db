"""Produce latency at a fixed rate (by default half of Riverbed's measured peak), Riverbed
beside Apache Kafka in one run.

Per value size (``--sizes``, default 1024 and 100 bytes):

1. **peak**: unless ``--rate`` is given, Riverbed's saturating produce rate is measured as
   in ``bench/bench_produce_consume.py`` (``--peak-messages`` values, median of
   ``--peak-runs``), and the target rate is ``--fraction`` (default 0.5) of it.  The same
   target rate is then used for every peer, so the figures compare like with like.
2. **rate-limited runs**: a fresh idempotent producer (``acks=all``, ``linger.ms``
   ``--linger`` (default 5), ``batch.size`` 1 MiB, no compression) sends values to a fresh
   topic (``--partitions``, default 4) at the target rate for ``--seconds`` (default 5;
   a pacing loop produces what is due every ~1 ms); **p50/p99/max** are per-message
   delivery-report latencies (``Message.latency()``: librdkafka's time from ``produce()``
   to the moment the application's ``poll()`` serves the delivery report, so the wait for
   the Python thread is in it); **rtt** p50/p99 is librdkafka's own Produce round trip
   (request written -> response read, on its broker thread: the broker's share as the client
   sees it) and **queue** p99 the time messages waited in the client before a request took
   them (:class:`ClientHistograms`); for Riverbed peers **fsync** p99 is the broker's own
   ``riverbed_fsync_duration_seconds`` over the run (scraped from its ``metrics.listen``
   endpoint; the upper bound of the bucket holding the 99th percentile flush), which tells
   the disk's share of the round trip's tail; **Produce** p99 likewise its
   ``riverbed_request_duration_seconds{api="Produce"}`` (the handling of one request, the
   fsync wait included: what the round trip holds beyond it is the sockets' queues and
   the client's own threads); **on helpers** the share of its log flushes whose fsync
   ran on a flusher helper thread rather than the io_uring
   (``riverbed_log_flushes_total``); **broker CPU** its process's CPU seconds (all
   threads) per 10^9 bytes of values sent in the run and **peak RSS** its resident
   high-water mark (``VmHWM``) after the run, for every peer with a broker process
   (Kafka's JVM too; the medians line gives the highest). ``--repeat`` runs (default 5)
   per peer and size, alternating the peers; the medians are printed, with the 1-minute
   load average of each run (a loaded box delays every process that takes part). Before
   each run the box's dirty pages are written back (``os.sync()``, untimed;
   ``--no-write-back`` skips it): Kafka acknowledges from the page cache and the kernel
   writes its data back up to 30 s later, inside the next peer's run, where every fsync
   on the disk waits behind it.

Note on the floor: with ``linger.ms`` L, librdkafka holds the first message of a batch
for L ms before sending it, unless the batch fills first; below ``batch.size`` per L ms
(1 MiB per 5 ms = 200 MB/s) every batch waits the full linger, so p50 and p99 are at
least L plus a round trip for any broker.  ``--linger 0`` measures the broker's share.

Run: ``.venv/bin/python bench/bench_latency.py [--sizes 1024,100] [--rate MSGS]
[--fraction 0.5] [--seconds 5] [--repeat 5] [--linger 5] [--peers riverbed,kafka]
[--json PATH]``.  Peer ``riverbed-nofsync`` is a second Riverbed broker on Kafka's flush
policy (``flush.messages``/``flush.ms`` at Long.MAX_VALUE: no fsync before the ack), so
the fsync's share of the latency shows; peer ``riverbed-nozero`` one without pre-zeroed
segment space (``riverbed.log.zero.window.bytes=0``); peer ``riverbed-threads`` one whose
fsyncs all run on helper threads (``riverbed.log.flush.io.uring=false``); peer
``baseline`` is a Riverbed broker imported from ``--baseline-src DIR`` (a copy of
``src/``), for before/after runs.
Peer ``mock`` is librdkafka's mock cluster (hosted in this process, reached over TCP, its
auto-created topics have 4 partitions whatever ``--partitions`` says): it acknowledges at
once and keeps nothing, so its delivery p99 is the application's own at that rate on this
box (mostly delivery reports waiting for the Python thread), a floor under every
broker's delivery p99; its rtt is near zero.  Goal 2's 5 ms is printed against both the
delivery p99 and the round trip's.
Exit status 0 whether or not a goal is met (this is a measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import (
    BROKER_PIDS,
    NO_FSYNC,
    cpu_seconds,
    free_port,
    peak_rss_mb,
    riverbed_subprocess,
    write_back,
)
from bench_produce_consume import (
    MOCK_PARTITIONS,
    DeliveryLatencies,
    create_topic,
    durable_producer,
    kafka_reference,
    mock_cluster,
    percentile,
    produce,
    produce_paced,
)

GOAL_P99_MS = 5.0


@dataclass(frozen=True, slots=True)
class Run:
    peer: str
    size: int
    target_rate: float
    achieved_rate: float
    messages: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    load1: float
    # librdkafka's own histograms (ClientHistograms): the Produce round trip and the time a
    # message waited in the client's queue before a request took it; NaN for no windows
    rtt_p50_ms: float = float("nan")
    rtt_p99_ms: float = float("nan")
    queue_p99_ms: float = float("nan")
    # the broker's own riverbed_fsync_duration_seconds over the run (Riverbed peers): the
    # upper bound of the bucket holding the 99th percentile flush; NaN for other peers
    fsync_p99_ms: float = float("nan")
    # riverbed_request_duration_seconds{api="Produce"} likewise: the broker's handling of
    # one Produce request, the fsync wait included (not the socket's queues)
    produce_p99_ms: float = float("nan")
    # the share of its log flushes whose fsync ran on a helper thread, not the io_uring
    # (riverbed_log_flushes_total); NaN for other peers
    helper_share: float = float("nan")
    # the broker process's CPU seconds per 10^9 bytes of values over the run, and its
    # peak resident set so far (VmHWM, MiB); NaN for the mock (no broker process)
    broker_cpu_s_per_gb: float = float("nan")
    broker_peak_rss_mb: float = float("nan")


class ClientHistograms:
    """librdkafka's own latency histograms of one producer, read from its statistics.

    ``Message.latency()`` is taken when the application's ``poll()`` serves the delivery
    report, so it includes how long the report waited for the Python thread (a 2-core box
    running producer, client threads and broker: tens of ms at p99, whatever the broker).
    librdkafka measures two parts of a message's life on its own threads, per statistics
    window (:data:`INTERVAL_MS`), as HDR histograms (STATISTICS.md):

    * ``rtt``: a request's round trip, written to the socket -> its response read: the
      broker's acknowledgement as the client sees it;
    * ``int_latency``: ``produce()`` -> the message taken into a Produce request (the
      linger, and the wait for the partition's request in flight).

    Windows are not merged (their histograms are not in the statistics): a run's p50 is
    the median of its windows' p50s, its p99 the **largest** window p99 (an upper bound
    on the run's).  Kept: the windows emitted between :meth:`record` on and off except the
    first (it began before, in the warm-up); the window under way at the end is never
    emitted.  Only brokers with a node id count (not the bootstrap connection).
    Callbacks run on the thread that calls ``poll()``/``flush()``; a lock guards the lists.
    """

    INTERVAL_MS = 1000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rtt: list[tuple[float, float]] = []  # (p50, p99) us per window with requests
        self._queue: list[float] = []  # int_latency p99 us per window with messages
        self._recording = False
        self._skip = False

    def settings(self) -> dict[str, object]:
        return {"statistics.interval.ms": self.INTERVAL_MS, "stats_cb": self._on_stats}

    def record(self, on: bool) -> None:
        """Keep windows emitted from now on (``True``) or stop keeping them."""
        with self._lock:
            self._recording = on
            if on:
                self._skip = True
                self._rtt.clear()
                self._queue.clear()

    def _on_stats(self, text: str) -> None:
        brokers = [b for b in json.loads(text).get("brokers", {}).values() if b["nodeid"] >= 0]
        with self._lock:
            if not self._recording:
                return
            if self._skip:
                self._skip = False
                return
            for b in brokers:
                if b["rtt"]["cnt"]:
                    self._rtt.append((b["rtt"]["p50"], b["rtt"]["p99"]))
                if b["int_latency"]["cnt"]:
                    self._queue.append(b["int_latency"]["p99"])

    def summary_ms(self) -> tuple[float, float, float]:
        """(rtt p50, rtt p99, int_latency p99) in ms over the recorded windows."""
        nan = float("nan")
        with self._lock:
            rtt, queue = list(self._rtt), list(self._queue)
        return (
            statistics.median(p50 for p50, _ in rtt) / 1e3 if rtt else nan,
            max(p99 for _, p99 in rtt) / 1e3 if rtt else nan,
            max(queue) / 1e3 if queue else nan,
        )


def load1() -> float:
    return os.getloadavg()[0]


def rate_limited(
    bootstrap: str,
    topic: str,
    size: int,
    rate: float,
    seconds: float,
    linger_ms: float,
    histograms: ClientHistograms | None = None,
) -> tuple[float, list[float]]:
    """Produce ``size``-byte values at ``rate`` msg/s for ``seconds``; returns the rate
    reached and the delivery latencies (s).  ``histograms`` (fresh per run) keeps the
    statistics windows of the paced part and the final flush."""
    producer = durable_producer(
        bootstrap, linger_ms, **(histograms.settings() if histograms is not None else {})
    )
    delivered = DeliveryLatencies()
    value = os.urandom(size)
    delivered.warm_up(producer, topic, value, 100)
    if histograms is not None:
        histograms.record(True)
    start = time.perf_counter()
    end = start + seconds
    sent = produce_paced(producer, topic, value, rate, delivered, lambda: time.perf_counter() < end)
    elapsed = time.perf_counter() - start
    remaining = producer.flush(60)
    if histograms is not None:
        histograms.record(False)
    if remaining or delivered.errors:
        errors = delivered.errors
        raise RuntimeError(f"{remaining} undelivered, {len(errors)} errors: {errors[:3]}")
    return sent / elapsed, delivered.latencies


# Kafka's default flush policy (no fsync per append: page cache) for Riverbed, to tell the
# fsync's share of Riverbed's latency from the rest (docs/storage.md, flush policies).
NO_ZERO_WINDOW = ("riverbed.log.zero.window.bytes=0",)
# every fsync on the flusher's helper threads, none through io_uring (docs/storage.md
# "Where the fsync runs")
THREADS_ONLY = ("riverbed.log.flush.io.uring=false",)
PEERS = (
    "riverbed",
    "riverbed-nofsync",
    "riverbed-nozero",
    "riverbed-threads",
    "baseline",
    "kafka",
    "mock",
)


METRICS_PORTS: dict[str, int] = {}
"""peer -> the port of its broker's /metrics (``metrics.listen``), for Riverbed peers."""


def broker_metrics(peer: str) -> dict[str, dict[float, float]]:
    """From ``peer``'s /metrics: the cumulative buckets (``le`` in seconds -> count) of
    ``riverbed_fsync_duration_seconds`` (key ``fsync``) and of
    ``riverbed_request_duration_seconds{api="Produce"}`` (key ``produce``), and
    ``riverbed_log_flushes_total`` by thread (key ``flushes``: 0.0 the event loop, 1.0 a
    helper); {} for a peer without a metrics endpoint."""
    port = METRICS_PORTS.get(peer)
    if port is None:
        return {}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    heads = {
        'riverbed_fsync_duration_seconds_bucket{le="': "fsync",
        'riverbed_request_duration_seconds_bucket{api="Produce",le="': "produce",
    }
    threads = {
        'riverbed_log_flushes_total{thread="event_loop"} ': 0.0,
        'riverbed_log_flushes_total{thread="helper"} ': 1.0,
    }
    out: dict[str, dict[float, float]] = {"fsync": {}, "produce": {}, "flushes": {}}
    for line in text.splitlines():
        for head, key in heads.items():
            if line.startswith(head):
                le, _, count = line[len(head) :].partition('"} ')
                out[key][float(le)] = float(count)
        for head, thread in threads.items():
            if line.startswith(head):
                out["flushes"][thread] = float(line[len(head) :])
    return out


def p99_bound_ms(before: dict[float, float], after: dict[float, float]) -> float:
    """The upper bound (ms) of the bucket holding the run's 99th percentile, from two
    scrapes of one histogram's cumulative buckets (NaN: nothing counted)."""
    deltas = sorted((le, after[le] - before.get(le, 0.0)) for le in after)
    if not deltas or deltas[-1][1] <= 0:
        return float("nan")
    wanted = 0.99 * deltas[-1][1]
    return next(le for le, count in deltas if count >= wanted) * 1e3


def helper_share(before: dict[float, float], after: dict[float, float]) -> float:
    """The share of the run's log flushes that ran on a helper thread (NaN: none)."""
    loop = after.get(0.0, 0.0) - before.get(0.0, 0.0)
    helper = after.get(1.0, 0.0) - before.get(1.0, 0.0)
    return helper / (loop + helper) if loop + helper > 0 else float("nan")


def broker_figures(peer: str, before: dict[str, dict[float, float]]) -> tuple[float, float, float]:
    """The run's fsync p99 bound, Produce handling p99 bound (ms) and helper share since
    the scrape ``before`` (NaN for a peer without a metrics endpoint)."""
    if not before:
        return float("nan"), float("nan"), float("nan")
    after = broker_metrics(peer)
    return (
        p99_bound_ms(before["fsync"], after["fsync"]),
        p99_bound_ms(before["produce"], after["produce"]),
        helper_share(before["flushes"], after["flushes"]),
    )


def riverbed_peer(peer: str, src: str | None = None, config: tuple[str, ...] = ()) -> Any:
    port = free_port()
    METRICS_PORTS[peer] = port
    return riverbed_subprocess(False, src, config=(f"metrics.listen=127.0.0.1:{port}", *config))


def peers_context(peer: str, baseline_src: str | None) -> contextlib.AbstractContextManager[str]:
    if peer == "riverbed":
        return riverbed_peer(peer)
    if peer == "baseline":
        if baseline_src is None:
            raise ValueError("peer baseline needs --baseline-src")
        return riverbed_peer(peer, str(Path(baseline_src).resolve()))
    if peer == "riverbed-nofsync":
        return riverbed_peer(peer, config=NO_FSYNC)
    if peer == "riverbed-nozero":
        return riverbed_peer(peer, config=NO_ZERO_WINDOW)
    if peer == "riverbed-threads":
        return riverbed_peer(peer, config=THREADS_ONLY)
    if peer == "mock":
        return mock_cluster()
    return kafka_reference()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1024,100")
    parser.add_argument("--peers", default="riverbed,kafka")
    parser.add_argument("--rate", type=float, help="msg/s for every size (skips the peak)")
    parser.add_argument("--fraction", type=float, default=0.5, help="of the peak")
    parser.add_argument("--peak-messages", type=int, default=100_000)
    parser.add_argument("--peak-runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--linger", type=float, default=5.0, help="linger.ms")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--json", type=Path, help="write every run here")
    parser.add_argument(
        "--baseline-src",
        metavar="DIR",
        help="peer 'baseline': the Riverbed broker imported from DIR (a copy of src/)",
    )
    parser.add_argument(
        "--no-write-back",
        action="store_true",
        help="do not os.sync() before each run (one peer's dirty pages then land in the next run)",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if set(peers) - set(PEERS) or (args.rate is None and "riverbed" not in peers):
        parser.error(f"peers are {', '.join(PEERS)} (riverbed for the peak unless --rate)")
    print(
        f"{os.cpu_count()} CPUs, load {load1():.1f}; confluent-kafka acks=all idempotent "
        f"linger.ms={args.linger:g}, {args.partitions} partitions, {args.seconds:g} s per run"
        f"{'' if args.no_write_back else ', dirty pages written back before each'}",
        flush=True,
    )
    runs: list[Run] = []
    with contextlib.ExitStack() as stack:
        bootstraps = {
            peer: stack.enter_context(peers_context(peer, args.baseline_src)) for peer in peers
        }
        rates: dict[int, float] = {}
        for size in sizes:
            if args.rate is not None:
                rates[size] = args.rate
                continue
            peaks = []
            for _ in range(args.peak_runs):
                topic = f"peak-{size}-{int(time.time() * 1000)}"
                create_topic(bootstraps["riverbed"], topic, args.partitions)
                took, _lat, _cpu = produce(bootstraps["riverbed"], topic, args.peak_messages, size)
                peaks.append(args.peak_messages / took)
            peak = statistics.median(peaks)
            rates[size] = peak * args.fraction
            print(
                f"riverbed peak {size} B: {peak:,.0f} msg/s (median of {args.peak_runs}: "
                f"{' '.join(f'{p:,.0f}' for p in peaks)}) -> target {rates[size]:,.0f} msg/s  "
                f"[load {load1():.1f}]",
                flush=True,
            )
        for i in range(args.repeat):
            for size in sizes:
                order = peers if i % 2 == 0 else list(reversed(peers))
                for peer in order:
                    topic = f"lat-{size}-{int(time.time() * 1000)}"
                    if peer == "mock":  # no controller: the mock auto-creates the topic
                        topic += f"-auto{MOCK_PARTITIONS}"
                    else:
                        create_topic(bootstraps[peer], topic, args.partitions)
                    if not args.no_write_back:
                        write_back()
                    histograms = ClientHistograms()
                    metrics_before = broker_metrics(peer)
                    pid = BROKER_PIDS.get(bootstraps[peer])
                    cpu0 = cpu_seconds(pid) if pid is not None else float("nan")
                    reached, lat = rate_limited(
                        bootstraps[peer],
                        topic,
                        size,
                        rates[size],
                        args.seconds,
                        args.linger,
                        histograms,
                    )
                    lat.sort()
                    cpu = cpu_seconds(pid) - cpu0 if pid is not None else float("nan")
                    run = Run(
                        peer,
                        size,
                        rates[size],
                        reached,
                        len(lat),
                        percentile(lat, 0.50) * 1e3,
                        percentile(lat, 0.99) * 1e3,
                        (lat[-1] if lat else float("nan")) * 1e3,
                        load1(),
                        *histograms.summary_ms(),
                        *broker_figures(peer, metrics_before),
                        cpu / (len(lat) * size / 1e9) if lat else float("nan"),
                        peak_rss_mb(pid) if pid is not None else float("nan"),
                    )
                    runs.append(run)
                    print(
                        f"{peer:<9} {size:>5} B  {run.achieved_rate:>9,.0f} msg/s "
                        f"(target {run.target_rate:,.0f})  p50 {run.p50_ms:6.2f} ms  "
                        f"p99 {run.p99_ms:6.2f} ms  max {run.max_ms:7.2f} ms  "
                        f"| rtt p50 {run.rtt_p50_ms:5.2f} p99 {run.rtt_p99_ms:6.2f} ms  "
                        f"queue p99 {run.queue_p99_ms:6.2f} ms  | broker p99 <= fsync "
                        f"{run.fsync_p99_ms:5.1f} ms, Produce {run.produce_p99_ms:5.1f} ms, "
                        f"on helpers {run.helper_share:4.0%}  | broker CPU "
                        f"{run.broker_cpu_s_per_gb:.2f} s/GB, peak RSS "
                        f"{run.broker_peak_rss_mb:,.0f} MiB  [load {run.load1:.1f}]",
                        flush=True,
                    )
    print(f"\nmedians of {args.repeat} runs:")
    medians: dict[tuple[str, int], Run] = {}
    for peer in peers:
        for size in sizes:
            group = [r for r in runs if r.peer == peer and r.size == size]
            m = Run(
                peer,
                size,
                group[0].target_rate,
                statistics.median(r.achieved_rate for r in group),
                int(statistics.median(r.messages for r in group)),
                statistics.median(r.p50_ms for r in group),
                statistics.median(r.p99_ms for r in group),
                statistics.median(r.max_ms for r in group),
                statistics.median(r.load1 for r in group),
                statistics.median(r.rtt_p50_ms for r in group),
                statistics.median(r.rtt_p99_ms for r in group),
                statistics.median(r.queue_p99_ms for r in group),
                statistics.median(r.fsync_p99_ms for r in group),
                statistics.median(r.produce_p99_ms for r in group),
                statistics.median(r.helper_share for r in group),
                statistics.median(r.broker_cpu_s_per_gb for r in group),
                max(r.broker_peak_rss_mb for r in group),
            )
            medians[(peer, size)] = m
            print(
                f"{peer:<9} {size:>5} B  {m.achieved_rate:>9,.0f} msg/s  p50 {m.p50_ms:6.2f} ms  "
                f"p99 {m.p99_ms:6.2f} ms  max {m.max_ms:7.2f} ms  | rtt p50 {m.rtt_p50_ms:5.2f} "
                f"p99 {m.rtt_p99_ms:6.2f} ms  queue p99 {m.queue_p99_ms:6.2f} ms  "
                f"| broker p99 <= fsync {m.fsync_p99_ms:5.1f} ms, Produce "
                f"{m.produce_p99_ms:5.1f} ms, on helpers {m.helper_share:4.0%}  "
                f"| broker CPU {m.broker_cpu_s_per_gb:.2f} s/GB, peak RSS "
                f"{m.broker_peak_rss_mb:,.0f} MiB  [load {m.load1:.1f}]"
            )
    for size in sizes:
        ours = medians.get(("riverbed", size))
        if ours is None:
            continue
        line = f"riverbed {size:>5} B p99 {ours.p99_ms:.2f} ms: "
        line += "meets" if ours.p99_ms <= GOAL_P99_MS else "ABOVE"
        line += f" the {GOAL_P99_MS:g} ms goal"
        kafka = medians.get(("kafka", size))
        if kafka is not None:
            line += f"; x{ours.p99_ms / kafka.p99_ms:.2f} Kafka's p99 ({kafka.p99_ms:.2f} ms)"
        mock = medians.get(("mock", size))
        if mock is not None:
            line += f"; the client's own p99 (mock) {mock.p99_ms:.2f} ms"
        print(line)
        line = f"riverbed {size:>5} B Produce round trip p99 {ours.rtt_p99_ms:.2f} ms: "
        line += "meets" if ours.rtt_p99_ms <= GOAL_P99_MS else "ABOVE"
        line += f" the {GOAL_P99_MS:g} ms goal"
        if kafka is not None:
            ratio = ours.rtt_p99_ms / kafka.rtt_p99_ms
            line += f"; x{ratio:.2f} Kafka's ({kafka.rtt_p99_ms:.2f} ms)"
        print(line)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1))


if __name__ == "__main__":
    main()
