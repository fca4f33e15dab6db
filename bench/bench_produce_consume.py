"""Produce/consume throughput and produce latency of Riverbed next to its peers.

One run measures the same confluent-kafka workload against each peer (``--peers``); every
peer runs for the whole benchmark and the runs alternate (per repeat, per size, each peer
in turn):

* ``riverbed`` - ``riverbed broker`` in a subprocess on a temp data dir (uvloop, the
  default flush policy: fsync per append with group commit), or in-process
  (``--broker embedded``, sharing the benchmark's GIL), or an already running broker
  (``--bootstrap HOST:PORT``);
* ``riverbed-nofsync`` - a second subprocess broker on Kafka's flush policy
  (``flush.messages``/``flush.ms`` at Long.MAX_VALUE: acknowledged from the page cache),
  so the share of the fsync before every acknowledgement shows;
* ``riverbed-threads`` - a subprocess broker whose fsyncs all run on the flusher's helper
  threads (``riverbed.log.flush.io.uring=false``; docs/storage.md "Where the fsync runs");
* ``baseline`` - a subprocess broker imported from ``--baseline-src DIR`` (before/after);
* ``kafka``    - the Apache Kafka broker (``riverbed.testing.kafka_reference``, KRaft, single
  node, Kafka's default flush policy: page cache, no fsync per append);
* ``mock``     - librdkafka's in-process mock cluster (``test.mock.num.brokers=1``): no disk,
  no Python on the broker side; the ceiling one Python client process can reach.

Per value size (``--sizes``, default 100 and 1024 bytes) and peer:

* **produce**: a fresh idempotent producer (``acks=all``, ``linger.ms=5``,
  ``batch.size=1 MiB``, ``batch.num.messages=10000``, no compression, librdkafka's
  default 100k-message queue) sends ``--messages`` values without keys to a fresh topic
  (``--partitions``, default 4: what the mock cluster auto-creates) as fast as
  ``produce()`` allows; msgs/s and MB/s (values
  only, 10^6 bytes) count from the first ``produce()`` to the end of ``flush()``.
  **p50/p99** are per-message delivery-report latencies (``Message.latency()``: from
  ``produce()`` to the ``poll()`` that serves the delivery report, every 1,024 values
  here), so under saturation they include the time spent queued in the client and the
  report's wait for the Python thread;
* **consume**: a fresh consumer (:data:`CONSUMER_SETTINGS`: ``fetch.wait.max.ms=10``,
  ``fetch.queue.backoff.ms=10``) assigned every partition at its start reads them all
  back, exactly low to high watermark per partition (``consume(min(10000, left))``
  batches; a shortfall after 120 s raises); msgs/s and MB/s from ``assign()`` to the last
  message, and the longest single ``consume()`` call, where a client-side stall would
  show.  The mock cluster keeps only a bounded tail of each partition (~125-185k records
  of 100 B, ~17-19k of 1 KiB), so its consume figure covers fewer records; at 1 KiB it is
  dominated by start-up: it is no ceiling;
* **broker CPU s/GB** (subprocess brokers and Kafka's JVM): the broker process's user +
  system CPU seconds (``/proc/PID/stat``, all threads) over the produce phase (warm-up
  excluded), per 10^9 bytes of values produced.  It moves less with other load on the
  box than wall-clock rates do (but still by up to 2x on a box at load 20: the client's
  request sizes change with it): compare medians of several runs before and after a
  broker change (``--baseline-src``), or use ``bench_produce_cpu.py``, which alternates.
* **broker peak RSS** (the same brokers): the process's resident high-water mark so far
  (``VmHWM``), read after each run; the summary gives the highest of the runs, so it is
  the peak over the whole benchmark up to that peer's last run.

Before the peers' runs of each size, the **disk ceiling** (``--no-disk`` skips it): the
same number of bytes written in 1 MiB writes to a file on the benchmark's temp directory's
disk with one ``fdatasync`` at the end, the most favourable way to make them durable; a
broker that fsyncs before every acknowledgement cannot produce faster for long.

Then ratios Riverbed/Kafka and Riverbed/mock (and those of ``riverbed-nofsync``), each
Riverbed peer over the disk ceiling, and the bars Riverbed aims for on a 2-core box.
Client and broker share the machine's cores: compare ratios within one run, not absolute
numbers across runs.  ``--profile`` runs the subprocess broker under cProfile (event-loop
thread only; the storage flusher threads are not profiled) and prints the top functions
by cumulative and by own time after the workload.

Run: ``.venv/bin/python bench/bench_produce_consume.py [--messages 200000] [--sizes 100,1024]
[--peers riverbed,riverbed-nofsync,kafka,mock] [--broker subprocess|embedded]
[--bootstrap HOST:PORT] [--repeat 3] [--no-disk] [--profile] [--json PATH]``.  Each peer
and size runs ``--repeat`` times; ratios and bars use the medians, and the best run is
printed too (other tenants of a shared box add noise).  Before each run the box's dirty
pages are written back (``os.sync()``, untimed; ``--no-write-back`` skips it), so a run
does not pay for the write-back of an earlier run's page-cache data (Kafka acknowledges
from the page cache).  ``--pretouch GIB`` also writes that much fresh memory in a child
before each run (untimed), so that on a VM that backs guest memory lazily the run's
page-cache pages are already host-backed (``_bench_common.pretouch``).
``--client-wakeups`` also prints the producer's broker-thread wake-ups per 1,000 messages
(:class:`ClientWakeups`): what a slower acknowledgement costs the client; and
librdkafka's own Produce round trip, p50/p99 (``rtt``: the broker's share of the
latency as the client sees it, without the delivery report's wait for ``poll()``).
Exit status 0 whether or not the bars are met (this is a measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from _bench_common import (
    BROKER_PIDS,
    NO_FSYNC,
    cpu_seconds,
    disk_write_seconds,
    peak_rss_mb,
    pretouch,
    riverbed_subprocess,
    write_back,
)
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

BARS = (
    "Riverbed bars on this 2-core box: 100 B produce >= 200k msg/s, "
    "1 KiB produce >= 200 MB/s, consume >= 500k msg/s"
)
PRODUCE_BAR_MSGS_100B = 200_000.0
PRODUCE_BAR_MBS_1KIB = 200.0
CONSUME_BAR_MSGS = 500_000.0
WARMUP_MESSAGES = 1_000
LINGER_MS = 5.0  # the producer's linger.ms in the saturating runs
MOCK_PARTITIONS = 4  # what librdkafka's mock cluster gives an auto-created topic
CONSUME_DEADLINE_S = 120.0  # reading up to the high watermarks must finish in this

# The consumer's settings, the same for every peer (plus a fresh ``group.id``; the
# partitions are assigned, the group is never joined).
CONSUMER_SETTINGS: dict[str, object] = {
    "enable.auto.commit": False,
    "enable.partition.eof": False,
    "auto.offset.reset": "earliest",
    # librdkafka's default 500 ms long poll left the consumer idle in 100 ms stretches
    # against Kafka and Riverbed alike (5-7x slower); a short one measures the broker.
    "fetch.wait.max.ms": 10,
    # When the consumer's local queue holds queued.min.messages (100,000, counted over all
    # assigned partitions, as they share one queue) or queued.max.messages.kbytes (64 MiB),
    # librdkafka stops fetching for fetch.queue.backoff.ms, 1000 ms by default.  200,000
    # records of 100 B arrive faster than Python drains them, so whenever the fetcher got
    # 100,000 ahead the consumer sat idle for a full second, against every peer alike
    # (~184k msg/s = 201,000 records in ~1.09 s; debug=fetch logs "queued.min.messages
    # exceeded ... Fetch backoff for 1000ms").  Whether it got that far ahead was a race,
    # so runs flipped between ~1.5M and ~184k msg/s.  A 10 ms backoff keeps the bounded
    # prefetch but resumes fetching while ~100,000 records are still queued, so the
    # consumer never starves waiting on its own timer.
    "fetch.queue.backoff.ms": 10,
}


@dataclass(frozen=True, slots=True)
class Result:
    peer: str
    size: int
    messages: int
    produce_s: float
    p50_ms: float
    p99_ms: float
    consumed: int  # records read back: timed + warm-up ones (mock: only its retained tail)
    consume_s: float
    longest_call_ms: float  # the longest consume() call: a client-side stall shows here
    produce_cpu_s: float = float("nan")  # broker CPU seconds over the produce phase
    # this process's CPU seconds over the produce phase (warm-up included): the client's,
    # and for the mock cluster its broker's too (it runs in this process)
    client_cpu_s: float = float("nan")
    # librdkafka's broker-thread wake-ups over the produce phase, per 1,000 messages
    # (--client-wakeups; NaN: not counted)
    client_wakeups: float = float("nan")
    # librdkafka's request round trip over the produce phase, its statistics windows
    # merged (--client-wakeups; NaN: not counted)
    rtt_p50_ms: float = float("nan")
    rtt_p99_ms: float = float("nan")
    # the broker process's peak resident set so far, MiB (VmHWM; NaN: no broker process)
    broker_peak_rss_mb: float = float("nan")

    @property
    def cpu_s_per_gb(self) -> float:
        """Broker CPU seconds per 10^9 bytes of values produced (NaN: not measured)."""
        return self.produce_cpu_s / (self.messages * self.size / 1e9)

    @property
    def cores_busy(self) -> float:
        """Client plus broker CPU seconds per second of the produce phase (NaN parts: 0)."""
        broker = 0.0 if self.produce_cpu_s != self.produce_cpu_s else self.produce_cpu_s
        return (self.client_cpu_s + broker) / self.produce_s

    @property
    def client_cpu_s_per_gb(self) -> float:
        """This process's CPU seconds per 10^9 bytes of values produced."""
        return self.client_cpu_s / (self.messages * self.size / 1e9)

    @property
    def produce_msgs(self) -> float:
        return self.messages / self.produce_s

    @property
    def produce_mbs(self) -> float:
        return self.messages * self.size / self.produce_s / 1e6

    @property
    def consume_msgs(self) -> float:
        return self.consumed / self.consume_s

    @property
    def consume_mbs(self) -> float:
        return self.consumed * self.size / self.consume_s / 1e6


# -- peers ------------------------------------------------------------------------------


@contextlib.contextmanager
def riverbed_embedded() -> Iterator[str]:
    from riverbed.testing.embedded import EmbeddedBroker

    with (
        tempfile.TemporaryDirectory(prefix="riverbed-bench-") as tmp,
        EmbeddedBroker(Path(tmp) / "data") as broker,
    ):
        yield broker.bootstrap_servers


@contextlib.contextmanager
def kafka_reference() -> Iterator[str]:
    from riverbed.testing.kafka_reference import KafkaReference

    with KafkaReference(heap="1g") as kafka:
        if kafka._proc is not None:
            BROKER_PIDS[kafka.bootstrap_servers] = kafka._proc.pid
        try:
            yield kafka.bootstrap_servers
        finally:
            BROKER_PIDS.pop(kafka.bootstrap_servers, None)


@contextlib.contextmanager
def mock_cluster() -> Iterator[str]:
    """librdkafka's mock cluster, hosted by an idle client; other clients reach it over TCP."""
    host = Producer({"bootstrap.servers": "unused:9092", "test.mock.num.brokers": 1})
    brokers = host.list_topics(timeout=10).brokers
    address = next(iter(brokers.values()))
    try:
        yield f"{address.host}:{address.port}"
    finally:
        host.flush(5)


@contextlib.contextmanager
def existing(bootstrap: str) -> Iterator[str]:
    yield bootstrap


# -- workload ---------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def durable_producer(bootstrap: str, linger_ms: float = LINGER_MS, **settings: object) -> Producer:
    """The benchmarks' producer: ``acks=all``, idempotent, ``linger.ms`` ``linger_ms``,
    1 MiB batches, no compression; ``settings`` add to or override librdkafka's."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": linger_ms,
            "batch.size": 1 << 20,
            "compression.type": "none",
            **settings,
        }
    )


class DeliveryLatencies:
    """A delivery callback that keeps each acknowledged message's latency (s, librdkafka's
    ``Message.latency()``: ``produce()`` to the ``poll()`` serving the report, which
    confluent-kafka reads when it builds the ``Message``; the acknowledgement came at or
    before it) and each error's text."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def __call__(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        latency = msg.latency()  # type: ignore[attr-defined]
        if latency is not None:
            self.latencies.append(latency)

    def warm_up(self, producer: Producer, topic: str, value: bytes, messages: int) -> None:
        """Send ``messages`` values (connections, metadata, producer id), then forget them."""
        for _ in range(messages):
            producer.produce(topic, value=value, on_delivery=self)
        producer.flush(60)
        self.latencies.clear()


QUANTILE_POINTS = (
    ("min", 0.0), ("p50", 0.5), ("p75", 0.75), ("p90", 0.9), ("p95", 0.95),
    ("p99", 0.99), ("p99_99", 0.9999), ("max", 1.0),
)  # fmt: skip
"""The points of a librdkafka statistics histogram (``rtt``, ``int_latency``...) and the
fraction of the window's samples at or below each."""


def merged_quantile(windows: list[dict[str, float]], q: float) -> float:
    """The ``q``-quantile of one librdkafka histogram over several statistics windows (each
    a dict with ``cnt`` and the :data:`QUANTILE_POINTS`, in the histogram's unit), NaN
    without samples.  librdkafka publishes each window's quantiles, not its buckets, so
    this is an estimate: each window's samples are taken as spread linearly between its
    quantile points, the windows weighted by their counts."""
    live = [w for w in windows if w.get("cnt")]
    if not live:
        return float("nan")
    total = sum(w["cnt"] for w in live)
    curves = [(w["cnt"], [(float(w[k]), f) for k, f in QUANTILE_POINTS]) for w in live]

    def at_or_below(value: float) -> float:
        n = 0.0
        for cnt, points in curves:
            if value >= points[-1][0]:
                n += cnt
                continue
            for (x0, f0), (x1, f1) in itertools.pairwise(points):
                if x0 <= value < x1:
                    n += cnt * (f0 + (f1 - f0) * (value - x0) / (x1 - x0))
                    break
        return n

    lo = min(points[0][0] for _, points in curves)
    hi = max(points[-1][0] for _, points in curves)
    for _ in range(60):  # bisection: the smallest value with a q share at or below it
        mid = (lo + hi) / 2
        if at_or_below(mid) >= q * total:
            hi = mid
        else:
            lo = mid
    return hi


class ClientWakeups:
    """Counts librdkafka's broker-thread wake-ups (``wakeups`` in its statistics, summed
    over every broker connection of one producer: each wake-up is one turn of that
    thread's loop, a ``poll()`` and, when a ``produce()`` woke it, a futex hand-off).

    librdkafka's idempotent producer keeps one Produce request in flight per partition,
    whatever ``max.in.flight`` says; while a partition's next batch waits for that
    acknowledgement, its broker thread is woken again and again with nothing it may send
    (against a broker that fsyncs before it acknowledges, nearly once per ``produce()``).
    So this shows what a slower acknowledgement costs the client's CPU
    (docs/benchmarks.md, "The client's wake-ups").  librdkafka builds its statistics every
    :data:`STATS_INTERVAL_MS` and ``poll()``/``flush()`` hand them to this object on the
    calling thread, which parses the JSON: a little client CPU, for every peer alike;
    ``--client-wakeups`` turns it on.

    The same statistics carry librdkafka's ``rtt`` histogram per window (request written
    -> response read, on its broker thread); the windows emitted between :meth:`start`
    and :meth:`stop` are kept and merged (:func:`merged_quantile`) into
    :attr:`rtt_p50_ms` and :attr:`rtt_p99_ms`.  Unlike ``Message.latency()`` it does not
    hold the delivery report's wait for ``poll()``."""

    STATS_INTERVAL_MS = 200

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest = -1
        self._emitted = 0
        self._start = 0
        self.per_1000 = float("nan")
        """Wake-ups between :meth:`start` and :meth:`stop`, per 1,000 messages."""
        self._recording = False
        self._rtt: list[dict[str, float]] = []  # one per broker and window, in µs
        self.rtt_p50_ms = float("nan")
        self.rtt_p99_ms = float("nan")

    def settings(self) -> dict[str, object]:
        return {"statistics.interval.ms": self.STATS_INTERVAL_MS, "stats_cb": self._on_stats}

    def _on_stats(self, text: str) -> None:
        brokers = json.loads(text).get("brokers", {})
        total = sum(int(b.get("wakeups", 0)) for b in brokers.values())
        with self._lock:
            self._latest = total
            self._emitted += 1
            if self._recording:  # not the bootstrap connection (node id -1)
                self._rtt += [b["rtt"] for b in brokers.values() if b.get("nodeid", -1) >= 0]

    def _fresh(self, producer: Producer) -> int:
        """The count from a statistics emission that starts after this call."""
        with self._lock:
            seen = self._emitted
        deadline = time.monotonic() + 10 * self.STATS_INTERVAL_MS / 1000
        while time.monotonic() < deadline:
            producer.poll(self.STATS_INTERVAL_MS / 4000)
            with self._lock:
                if self._emitted >= seen + 2:  # the first may have begun before the call
                    return self._latest
        raise RuntimeError("librdkafka emitted no statistics")

    def start(self, producer: Producer) -> None:
        self._start = self._fresh(producer)
        with self._lock:
            self._recording = True

    def stop(self, producer: Producer, messages: int) -> None:
        """Sets :attr:`per_1000`: wake-ups since :meth:`start` per 1,000 of ``messages``,
        and the round trip's p50/p99 over the windows emitted since :meth:`start`."""
        with self._lock:
            self._recording = False
            windows = list(self._rtt)
        self.per_1000 = (self._fresh(producer) - self._start) / messages * 1000
        self.rtt_p50_ms = merged_quantile(windows, 0.50) / 1e3
        self.rtt_p99_ms = merged_quantile(windows, 0.99) / 1e3


def produce_paced(
    producer: Producer,
    topic: str,
    value: bytes,
    rate: float,
    on_delivery: Callable[[object, object], None],
    keep_going: Callable[[], bool],
) -> int:
    """Send ``value`` at ``rate`` msg/s while ``keep_going()``: every ~1 ms, what is due
    since the start (a full queue is served by polling); returns the messages sent.  Does
    not flush."""
    start = time.perf_counter()
    sent = 0
    while keep_going():
        due = int((time.perf_counter() - start) * rate)
        while sent < due:
            try:
                producer.produce(topic, value=value, on_delivery=on_delivery)
                sent += 1
            except BufferError:
                producer.poll(0.001)
        producer.poll(0.001)  # serves delivery reports; paces the loop at ~1 ms
    return sent


def produce(
    bootstrap: str,
    topic: str,
    messages: int,
    size: int,
    pid: int | None = None,
    wakeups: ClientWakeups | None = None,
) -> tuple[float, list[float], float]:
    """Seconds to produce ``messages`` values of ``size`` bytes, their latencies (s), and
    the CPU seconds broker process ``pid`` spent meanwhile (NaN without one).  With
    ``wakeups``, the producer emits statistics to it; its count starts after the warm-up
    and ends after the timed ``flush()`` (untimed)."""
    settings: dict[str, object] = {"batch.num.messages": 10_000}
    if wakeups is not None:
        settings.update(wakeups.settings())
    producer = durable_producer(bootstrap, LINGER_MS, **settings)
    delivered = DeliveryLatencies()
    on_delivery, latencies, errors = delivered, delivered.latencies, delivered.errors
    value = os.urandom(size)
    delivered.warm_up(producer, topic, value, WARMUP_MESSAGES)
    if wakeups is not None:
        wakeups.start(producer)
    send = producer.produce
    poll = producer.poll
    cpu0 = cpu_seconds(pid) if pid is not None else float("nan")
    start = time.perf_counter()
    for i in range(messages):
        while True:
            try:
                send(topic, value=value, on_delivery=on_delivery)
                break
            except BufferError:  # queue full: serve delivery reports, then retry
                poll(0.001)
        if i & 1023 == 0:
            poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    cpu = cpu_seconds(pid) - cpu0 if pid is not None else float("nan")
    if remaining or errors:
        raise RuntimeError(f"{remaining} undelivered, {len(errors)} errors: {errors[:3]}")
    if wakeups is not None:
        wakeups.stop(producer, messages)
    return elapsed, latencies, cpu


def consume(bootstrap: str, topic: str) -> tuple[int, float, float]:
    """Records read from the start of every partition to its high watermark, seconds, and
    the longest single ``consume()`` call (s).

    Reads what the log holds (low to high watermark, taken before ``assign()``): librdkafka's
    mock cluster keeps only a bounded tail of each partition, the brokers keep everything.
    Each partition must yield exactly ``high - low`` records, none at or past ``high``: a
    shortfall after :data:`CONSUME_DEADLINE_S`, an error or a record past the high
    watermark raises.
    """
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}", **CONSUMER_SETTINGS}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        partitions = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions]
        high_watermarks: dict[int, int] = {}
        remaining: dict[int, int] = {}
        for tp in partitions:
            low, high = consumer.get_watermark_offsets(tp, timeout=10)
            high_watermarks[tp.partition] = high
            remaining[tp.partition] = high - low
        expected = sum(remaining.values())
        left = expected
        longest_call = 0.0
        deadline = time.monotonic() + CONSUME_DEADLINE_S
        start = time.perf_counter()
        consumer.assign(partitions)
        while left > 0:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"consumed {expected - left}/{expected} records in "
                    f"{CONSUME_DEADLINE_S:.0f} s, "
                    f"missing per partition: {remaining}"
                )
            # Never ask for more than is left: consume() waits its timeout for a full batch.
            called = time.perf_counter()
            batch = consumer.consume(min(10_000, left), 0.1)
            longest_call = max(longest_call, time.perf_counter() - called)
            for msg in batch:
                if msg.error() is not None:
                    raise RuntimeError(str(msg.error()))
                partition, offset = msg.partition(), msg.offset()
                if partition is None or offset is None:
                    raise RuntimeError(f"{topic}: a record without partition or offset")
                if offset >= high_watermarks[partition]:
                    raise RuntimeError(
                        f"{topic} [{partition}]: record at {offset}, "
                        f"past high watermark {high_watermarks[partition]}"
                    )
                remaining[partition] -= 1
            left -= len(batch)
        elapsed = time.perf_counter() - start
        if any(remaining.values()):  # one partition's surplus hid another's shortfall
            raise RuntimeError(f"{topic}: records per partition off by {remaining}")
        return expected, elapsed, longest_call
    finally:
        consumer.close()


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def measure(
    peer: str, bootstrap: str, size: int, messages: int, partitions: int, wakeups: bool = False
) -> Result:
    topic = f"bench-{size}-{int(time.time() * 1000)}"
    if peer == "mock":
        topic += f"-auto{MOCK_PARTITIONS}"  # the mock cluster has no controller: auto-create
    else:
        create_topic(bootstrap, topic, partitions)
    pid = BROKER_PIDS.get(bootstrap)
    counter = ClientWakeups() if wakeups else None
    client0 = time.process_time()
    produce_s, latencies, produce_cpu_s = produce(bootstrap, topic, messages, size, pid, counter)
    client_cpu_s = time.process_time() - client0
    latencies.sort()
    consumed, consume_s, longest_call_s = consume(bootstrap, topic)
    return Result(
        peer,
        size,
        messages,
        produce_s,
        percentile(latencies, 0.50) * 1e3,
        percentile(latencies, 0.99) * 1e3,
        consumed,
        consume_s,
        longest_call_s * 1e3,
        produce_cpu_s,
        client_cpu_s,
        counter.per_1000 if counter is not None else float("nan"),
        counter.rtt_p50_ms if counter is not None else float("nan"),
        counter.rtt_p99_ms if counter is not None else float("nan"),
        peak_rss_mb(pid) if pid is not None else float("nan"),
    )


# -- report -----------------------------------------------------------------------------


def print_result(r: Result) -> None:
    print(
        f"{r.peer:<16} {r.size:>5} B  produce {r.produce_msgs:>10,.0f} msg/s "
        f"{r.produce_mbs:>7.1f} MB/s  p50 {r.p50_ms:>7.1f} ms  p99 {r.p99_ms:>7.1f} ms  "
        f"consume {r.consume_msgs:>10,.0f} msg/s {r.consume_mbs:>7.1f} MB/s "
        f"({r.consumed:,} read, longest consume() {r.longest_call_ms:,.0f} ms)"
        f"  broker CPU {r.cpu_s_per_gb:.2f} s/GB  client CPU {r.client_cpu_s_per_gb:.2f} s/GB"
        f"  broker peak RSS {r.broker_peak_rss_mb:,.0f} MiB"
        + (
            f"  client wake-ups {r.client_wakeups:,.0f}/1000 msgs"
            f"  rtt p50 {r.rtt_p50_ms:.2f} p99 {r.rtt_p99_ms:.2f} ms"
            if r.client_wakeups == r.client_wakeups
            else ""
        ),
        flush=True,
    )


def summarise(results: list[Result], pick: Callable[[list[float]], float]) -> list[Result]:
    """One Result per (peer, size): ``pick`` (median, min) applied to each timing.

    Consume timings are picked per record read, as the mock cluster's runs read different
    numbers of records; the summary reports the first run's count at the picked rate.
    """
    groups: dict[tuple[str, int], list[Result]] = {}
    for r in results:
        groups.setdefault((r.peer, r.size), []).append(r)
    return [
        Result(
            peer,
            size,
            runs[0].messages,
            pick([r.produce_s for r in runs]),
            pick([r.p50_ms for r in runs]),
            pick([r.p99_ms for r in runs]),
            runs[0].consumed,
            pick([r.consume_s / max(r.consumed, 1) for r in runs]) * runs[0].consumed,
            pick([r.longest_call_ms for r in runs]),
            pick([r.produce_cpu_s for r in runs]),
            pick([r.client_cpu_s for r in runs]),
            pick([r.client_wakeups for r in runs]),
            pick([r.rtt_p50_ms for r in runs]),
            pick([r.rtt_p99_ms for r in runs]),
            max(r.broker_peak_rss_mb for r in runs),  # a peak: the highest of the runs
        )
        for (peer, size), runs in groups.items()
    ]


def print_ratios(results: list[Result]) -> None:
    """Riverbed's medians over each peer's, and those of Riverbed on Kafka's flush policy
    (``riverbed-nofsync``) over Kafka's and the mock's: the fsync's share shows."""
    by_key = {(r.peer, r.size): r for r in results}
    pairs = [
        ("riverbed", p)
        for p in ("baseline", "riverbed-threads", "riverbed-nofsync", "kafka", "mock")
    ]
    pairs += [("riverbed-nofsync", p) for p in ("kafka", "mock")]
    for size in sorted({r.size for r in results}):
        for name, peer in pairs:
            ours, other = by_key.get((name, size)), by_key.get((peer, size))
            if ours is None or other is None:
                continue
            print(
                f"{name + '/' + peer:<27} {size:>5} B"
                f"  produce x{ours.produce_msgs / other.produce_msgs:.2f}"
                f"  consume x{ours.consume_msgs / other.consume_msgs:.2f}"
                f"  p50 x{ours.p50_ms / other.p50_ms:.2f}  p99 x{ours.p99_ms / other.p99_ms:.2f}"
                f"  broker CPU/GB x{ours.cpu_s_per_gb / other.cpu_s_per_gb:.2f}"
                f"  peak RSS x{ours.broker_peak_rss_mb / other.broker_peak_rss_mb:.2f}"
                + (
                    f"  rtt p99 x{ours.rtt_p99_ms / other.rtt_p99_ms:.2f}"
                    if ours.rtt_p99_ms == ours.rtt_p99_ms and other.rtt_p99_ms > 0
                    else ""
                )
            )


def print_bars(results: list[Result]) -> None:
    print(BARS)
    for r in results:
        if r.peer != "riverbed":
            continue
        checks = [("consume msg/s", r.consume_msgs, CONSUME_BAR_MSGS)]
        if r.size <= 100:
            checks.append(("produce msg/s", r.produce_msgs, PRODUCE_BAR_MSGS_100B))
        if r.size >= 1024:
            checks.append(("produce MB/s", r.produce_mbs, PRODUCE_BAR_MBS_1KIB))
        for name, value, bar in checks:
            verdict = "meets" if value >= bar else "BELOW"
            print(f"  riverbed {r.size:>5} B {name:<14} {value:>12,.1f} {verdict} bar {bar:,.0f}")


PEERS = ("riverbed", "riverbed-nofsync", "riverbed-threads", "baseline", "kafka", "mock")
RIVERBED_PEERS = ("riverbed", "riverbed-nofsync", "riverbed-threads", "baseline")
# every fsync on the flusher's helper threads (docs/storage.md "Where the fsync runs")
THREADS_ONLY = ("riverbed.log.flush.io.uring=false",)


def peer_context(peer: str, args: argparse.Namespace) -> contextlib.AbstractContextManager[str]:
    """The broker behind ``peer`` for the whole benchmark: yields its bootstrap address."""
    if peer == "riverbed":
        if args.bootstrap:
            return existing(args.bootstrap)
        if args.broker == "embedded":
            return riverbed_embedded()
        return riverbed_subprocess(args.profile)
    if peer == "riverbed-nofsync":
        return riverbed_subprocess(False, config=NO_FSYNC)
    if peer == "riverbed-threads":
        return riverbed_subprocess(False, config=THREADS_ONLY)
    if peer == "baseline":
        return riverbed_subprocess(False, str(Path(args.baseline_src).resolve()))
    if peer == "kafka":
        return kafka_reference()
    return mock_cluster()


def print_disk(size: int, messages: int, seconds: float) -> None:
    nbytes = messages * size
    print(
        f"{'disk':<9} {size:>5} B  write+fdatasync {nbytes / seconds / 1e6:>7.1f} MB/s "
        f"= {messages / seconds:>10,.0f} msg/s of {size} B (the bound of an fsync before "
        "every ack)",
        flush=True,
    )


def print_disk_ratios(medians: list[Result], disk_median_s: dict[int, float]) -> None:
    """Each Riverbed peer's produce rate over the disk's: how near the durable ceiling."""
    for r in medians:
        if r.size not in disk_median_s or r.peer not in RIVERBED_PEERS:
            continue
        disk_mbs = r.messages * r.size / disk_median_s[r.size] / 1e6
        print(
            f"{r.peer + '/disk':<27} {r.size:>5} B  produce x{r.produce_mbs / disk_mbs:.2f} "
            f"(disk {disk_mbs:.0f} MB/s with one fdatasync at the end)"
        )


CEILING_GOAL = 0.85  # issue 18.1: produce >= 0.85x the mock cluster


def print_ceiling_budget(medians: list[Result]) -> None:
    """The broker CPU per GB that :data:`CEILING_GOAL` x the mock's rate leaves, if client
    and broker together keep every core busy (saturation: CPU-bound on this box): cores /
    (goal x mock GB/s) - the client's CPU per GB in Riverbed's run.  Beside Riverbed's."""
    by_key = {(r.peer, r.size): r for r in medians}
    cores = os.cpu_count() or 1
    for size in sorted({r.size for r in medians}):
        ours, mock = by_key.get(("riverbed", size)), by_key.get(("mock", size))
        if ours is None or mock is None:
            continue
        budget = cores / (CEILING_GOAL * mock.produce_mbs / 1e3) - ours.client_cpu_s_per_gb
        print(
            f"{size:>5} B: {CEILING_GOAL}x the mock ({CEILING_GOAL * mock.produce_mbs:.0f} MB/s) "
            f"leaves the broker {budget:.2f} s/GB of {cores} cores beside the client's "
            f"{ours.client_cpu_s_per_gb:.2f} s/GB; riverbed used {ours.cpu_s_per_gb:.2f} s/GB "
            f"(cores busy: riverbed run {ours.cores_busy:.2f}, mock run {mock.cores_busy:.2f})"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--peers", default="riverbed,kafka,mock")
    parser.add_argument(
        "--partitions",
        type=int,
        default=MOCK_PARTITIONS,
        help="topic partitions (the mock cluster always auto-creates 4)",
    )
    parser.add_argument("--broker", choices=("subprocess", "embedded"), default="subprocess")
    parser.add_argument("--bootstrap", help="measure this running broker as 'riverbed'")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per peer and size; medians feed the ratios and bars",
    )
    parser.add_argument(
        "--no-disk",
        action="store_true",
        help="skip the disk ceiling (write + fdatasync of each run's bytes)",
    )
    parser.add_argument(
        "--no-write-back",
        action="store_true",
        help="do not os.sync() before each run",
    )
    parser.add_argument(
        "--pretouch",
        type=float,
        default=0.0,
        metavar="GIB",
        help="before each run, write this much fresh memory in a child and free it "
        "(untimed): a VM's first touch of guest pages out of the runs (_bench_common.pretouch)",
    )
    parser.add_argument(
        "--client-wakeups",
        action="store_true",
        help="also count the producer's broker-thread wake-ups per 1,000 messages "
        "(librdkafka statistics every 200 ms, for every peer: ClientWakeups)",
    )
    parser.add_argument(
        "--baseline-src",
        metavar="DIR",
        help="add peer 'baseline': the subprocess broker imported from DIR "
        "(a copy of src/ from before a change)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="also write every run and the medians here (bench/plot_benchmarks.py reads it)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run the subprocess broker under cProfile and print the top",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if args.baseline_src and "baseline" not in peers:
        peers.insert(peers.index("riverbed") + 1 if "riverbed" in peers else 0, "baseline")
    unknown = set(peers) - set(PEERS)
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}")
    if "baseline" in peers and not args.baseline_src:
        parser.error("peer 'baseline' needs --baseline-src")
    if args.profile and (args.bootstrap or args.broker != "subprocess"):
        parser.error("--profile needs the subprocess broker")

    print(
        f"{args.messages:,} messages per size, {args.partitions} partitions, "
        f"{os.cpu_count()} CPUs, confluent-kafka acks=all idempotent linger.ms=5, "
        f"load {os.getloadavg()[0]:.1f}"
        f"{'' if args.no_write_back else ', dirty pages written back before each run'}"
        f"{f', {args.pretouch:g} GiB of memory touched before each run' if args.pretouch else ''}"
    )
    results: list[Result] = []
    disk_s: dict[int, list[float]] = {size: [] for size in sizes}
    with contextlib.ExitStack() as stack:
        # Every peer runs for the whole benchmark and the runs alternate between them
        # (repeat, then size, then peer), so a quieter or busier minute of the box falls
        # on all of them alike; an idle peer costs the others little (Kafka's JVM idles
        # at a few % of a core).
        bootstraps = {peer: stack.enter_context(peer_context(peer, args)) for peer in peers}
        data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-disk-")))
        for _ in range(args.repeat):
            for size in sizes:
                if not args.no_disk:
                    if not args.no_write_back:
                        write_back()
                    disk_s[size].append(disk_write_seconds(data_dir, args.messages * size))
                    print_disk(size, args.messages, disk_s[size][-1])
                for peer in peers:
                    if not args.no_write_back:
                        write_back()
                    pretouch(args.pretouch)
                    result = measure(
                        peer,
                        bootstraps[peer],
                        size,
                        args.messages,
                        args.partitions,
                        args.client_wakeups,
                    )
                    print_result(result)
                    results.append(result)
    medians = summarise(results, statistics.median)
    if args.repeat > 1:
        print(f"\nmedian of {args.repeat} runs (ratios and bars below use these):")
        for r in medians:
            print_result(r)
        print(f"best of {args.repeat} runs (least disturbed by other load on the box):")
        for r in summarise(results, min):
            print_result(r)
    print()
    print_ratios(medians)
    if not args.no_disk:
        print_disk_ratios(medians, {size: statistics.median(t) for size, t in disk_s.items()})
    print_ceiling_budget(medians)
    print()
    print_bars(medians)
    if args.json:
        write_json(args.json, results, medians, args.repeat)


def result_dict(r: Result) -> dict[str, object]:
    return {
        "peer": r.peer,
        "size": r.size,
        "messages": r.messages,
        "produce_msgs": r.produce_msgs,
        "produce_mbs": r.produce_mbs,
        "p50_ms": r.p50_ms,
        "p99_ms": r.p99_ms,
        "consume_msgs": r.consume_msgs,
        "consume_mbs": r.consume_mbs,
        "broker_cpu_s_per_gb": r.cpu_s_per_gb,
        "broker_peak_rss_mb": r.broker_peak_rss_mb,
        "client_cpu_s_per_gb": r.client_cpu_s_per_gb,
        "client_wakeups_per_1000": r.client_wakeups,
        "rtt_p50_ms": r.rtt_p50_ms,
        "rtt_p99_ms": r.rtt_p99_ms,
    }


def write_json(path: Path, runs: list[Result], medians: list[Result], repeat: int) -> None:
    """``{"load1", "cpus", "repeat", "runs": [...], "medians": [...]}``: one object per
    run and per (peer, size) median, with msg/s, MB/s (10^6 bytes) and p50/p99 in ms."""
    path.write_text(
        json.dumps(
            {
                "load1": os.getloadavg()[0],
                "cpus": os.cpu_count(),
                "repeat": repeat,
                "runs": [result_dict(r) for r in runs],
                "medians": [result_dict(r) for r in medians],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
