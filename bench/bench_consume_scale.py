"""Consume throughput with several consumer processes: Riverbed next to Kafka (issue 18.3).

One consumer process is client-bound (bench_produce_consume.py: ~1.4M msg/s of 100 B, the
same against every peer), so it cannot say which broker serves faster.  This benchmark
reads with ``C`` consumer *processes* at once and measures what each side spends:

1. Both peers start and stay up for the whole run: ``riverbed broker`` in a subprocess on
   a temp data dir, and the Kafka reference broker (``riverbed.testing.kafka_reference``,
   Kafka 4.1.1, KRaft, 1 GiB heap).  Only one of them is read at a time.
2. Per value size (``--sizes``, default 100 and 1024 bytes), a topic of ``--partitions``
   partitions (default 8) is filled on each peer with ``--records`` values (default
   1,000,000 of 100 B, 300,000 of 1 KiB; no keys), round-robin over the partitions, by
   the benchmarks' durable producer (acks=all, idempotent).
3. For each ``C`` in ``--consumers`` (default 1,2,4), ``--repeat`` times (default 5),
   alternating the peers (and which goes first), ``C`` fresh consumer processes
   (``multiprocessing`` spawn) each get every ``C``-th partition (partition ``p`` goes to
   consumer ``p % C``; assigned, no group), connect and fetch metadata, wait until all are
   ready, then ``assign()`` from the start and read exactly low..high watermark of each of
   their partitions (:data:`bench_produce_consume.CONSUMER_SETTINGS`, the same
   ``consume(min(10000, left))`` loop and per-partition count checks; a shortfall after
   120 s raises).

Per run it prints: the aggregate rate (all records / (last consumer's last record - first
consumer's ``assign()``), ``time.monotonic``, system-wide), MB/s of values (10^6 bytes),
**broker CPU s per GB served** (utime+stime of the broker process from ``/proc/PID/stat``
over the run, all its threads; for Kafka the JVM's pid; per 10^9 bytes of values), the
consumers' CPU time per record (``time.process_time()`` of each consumer process from
``assign()`` to its last record: Python, confluent-kafka and librdkafka's threads), and
the 1-minute load average at the start of the run.

**Client ceiling.**  librdkafka's mock cluster keeps only a tail of each partition, so it
is no consume ceiling.  Instead the client's own cost is measured: a consumer process
that spends ``u`` CPU seconds per record can read at most ``1/u`` records/s with a whole
core to itself, and ``C`` of them on this box at most ``min(C, cpus)/u`` (**client
ceiling**, as if the broker cost nothing).  With the broker on the same cores, the whole
box can serve at most ``cpus / (u + b)`` records/s, ``b`` the broker's CPU s per record
(**box ceiling**): a broker that spends less CPU per record leaves the consumers more.
Medians of the runs per (size, C, peer) and the ratios Riverbed/Kafka follow.

Run: ``.venv/bin/python bench/bench_consume_scale.py [--sizes 100,1024]
[--records 1000000,300000] [--partitions 8] [--consumers 1,2,4] [--repeat 5]
[--peers riverbed,kafka] [--baseline-src DIR] [--profile] [--json PATH]``.
``--baseline-src`` adds peer ``baseline``: ``riverbed broker`` imported from ``DIR`` (a copy of
``src/`` from before a change), alternated with the others.  ``--profile`` runs the Riverbed
broker under cProfile (event-loop thread) and prints its top functions at the end.
Exit status 0 whatever the ratios (this is a measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import statistics
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _bench_common import BROKER_PIDS, cpu_seconds, load1, riverbed_subprocess
from bench_produce_consume import CONSUMER_SETTINGS, create_topic, durable_producer
from confluent_kafka import Consumer, TopicPartition

CONSUME_DEADLINE_S = 120.0
READY_TIMEOUT_S = 120.0  # spawning C Python processes on a loaded 2-core box is slow


# -- peers ------------------------------------------------------------------------------


@contextlib.contextmanager
def riverbed_broker(
    profile: bool, src: str | None = None, env_items: tuple[str, ...] = ()
) -> Iterator[tuple[str, int]]:
    """``riverbed broker`` on a temp dir (optionally under cProfile): yields (bootstrap, pid).

    ``src``: import ``riverbed`` from this source tree (``PYTHONPATH``), e.g. a copy of
    ``src/`` from before a change; ``env_items``: ``KEY=VALUE`` added to its environment."""
    env = dict(item.split("=", 1) for item in env_items)
    with riverbed_subprocess(profile, src, env=env, profile_limit=35) as bootstrap:
        yield bootstrap, BROKER_PIDS[bootstrap]


@contextlib.contextmanager
def kafka_broker() -> Iterator[tuple[str, int]]:
    """The Kafka reference broker: yields (bootstrap, the JVM's pid)."""
    from riverbed.testing.kafka_reference import KafkaReference

    with KafkaReference(heap="1g") as kafka:
        proc = kafka._proc
        if proc is None:
            raise RuntimeError("Kafka reference has no process")
        yield kafka.bootstrap_servers, proc.pid


# -- workload ---------------------------------------------------------------------------


def fill(bootstrap: str, topic: str, partitions: int, records: int, size: int) -> None:
    """Create ``topic`` and write ``records`` values of ``size`` bytes round-robin."""
    create_topic(bootstrap, topic, partitions)
    producer = durable_producer(bootstrap, **{"batch.num.messages": 10_000})
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    value = os.urandom(size)
    for i in range(records):
        while True:
            try:
                producer.produce(
                    topic, value=value, partition=i % partitions, on_delivery=on_delivery
                )
                break
            except BufferError:
                producer.poll(0.001)
        if i & 1023 == 0:
            producer.poll(0)
    remaining = producer.flush(300)
    if remaining or errors:
        raise RuntimeError(f"fill {topic}: {remaining} undelivered, errors {errors[:3]}")


@dataclass(frozen=True, slots=True)
class ConsumerResult:
    started: float  # time.monotonic() just before assign()
    finished: float  # time.monotonic() at the last record
    records: int
    cpu_s: float  # process_time() from assign() to the last record (all threads)
    longest_call_s: float


def consumer_process(
    bootstrap: str,
    topic: str,
    ranges: list[tuple[int, int, int]],
    ready: Any,
    go: Any,
    results: Any,
) -> None:
    """One consumer process: read partitions ``ranges`` ((partition, low, high) each)
    exactly, after ``go``; put a :class:`ConsumerResult` (or an error string) on ``results``."""
    try:
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"scale-{topic}", **CONSUMER_SETTINGS}
        )
        consumer.list_topics(topic, timeout=30)  # connected, metadata known
        ready.put(os.getpid())
        go.wait()
        high = {p: h for p, _, h in ranges}
        remaining = {p: h - lo for p, lo, h in ranges}
        left = sum(remaining.values())
        expected = left
        longest = 0.0
        cpu0 = time.process_time()
        started = time.monotonic()
        deadline = started + CONSUME_DEADLINE_S
        consumer.assign([TopicPartition(topic, p, lo) for p, lo, _ in ranges])
        while left > 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"read {expected - left}/{expected}, missing {remaining}")
            called = time.monotonic()
            batch = consumer.consume(min(10_000, left), 0.1)
            longest = max(longest, time.monotonic() - called)
            for msg in batch:
                if msg.error() is not None:
                    raise RuntimeError(str(msg.error()))
                partition, offset = msg.partition(), msg.offset()
                if partition is None or offset is None or offset >= high[partition]:
                    raise RuntimeError(f"{topic} [{partition}]: record at {offset} past high")
                remaining[partition] -= 1
            left -= len(batch)
        finished = time.monotonic()
        cpu = time.process_time() - cpu0
        if any(remaining.values()):
            raise RuntimeError(f"{topic}: records per partition off by {remaining}")
        consumer.close()
        results.put(ConsumerResult(started, finished, expected, cpu, longest))
    except BaseException as exc:  # reported to the parent, which raises
        ready.put(-1)
        results.put(f"consumer {os.getpid()}: {type(exc).__name__}: {exc}")


@dataclass(frozen=True, slots=True)
class Run:
    peer: str
    size: int
    consumers: int
    records: int
    wall_s: float
    broker_cpu_s: float
    consumer_cpu_s: float  # all consumer processes together
    longest_call_ms: float
    load1: float

    @property
    def rate(self) -> float:
        return self.records / self.wall_s

    @property
    def mbs(self) -> float:
        return self.records * self.size / self.wall_s / 1e6

    @property
    def broker_cpu_per_gb(self) -> float:
        return self.broker_cpu_s / (self.records * self.size / 1e9)

    @property
    def consumer_us_per_record(self) -> float:
        return self.consumer_cpu_s / self.records * 1e6

    @property
    def broker_us_per_record(self) -> float:
        return self.broker_cpu_s / self.records * 1e6

    @property
    def client_ceiling(self) -> float:
        """Records/s C consumer processes could reach if the broker cost nothing."""
        cpus = os.cpu_count() or 1
        return min(self.consumers, cpus) * self.records / max(self.consumer_cpu_s, 1e-9)

    @property
    def box_ceiling(self) -> float:
        """Records/s the whole box could serve with broker and consumers CPU-bound."""
        cpus = os.cpu_count() or 1
        return cpus * self.records / max(self.consumer_cpu_s + self.broker_cpu_s, 1e-9)


def partition_ranges(bootstrap: str, topic: str) -> list[tuple[int, int, int]]:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{topic}"})
    try:
        metadata = probe.list_topics(topic, timeout=30).topics[topic]
        ranges = []
        for p in sorted(metadata.partitions):
            low, high = probe.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            ranges.append((p, low, high))
        return ranges
    finally:
        probe.close()


def consume_run(
    ctx: Any,
    peer: str,
    bootstrap: str,
    pid: int,
    topic: str,
    ranges: list[tuple[int, int, int]],
    size: int,
    consumers: int,
) -> Run:
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = [[r for r in ranges if r[0] % consumers == i] for i in range(consumers)]
    procs = [
        ctx.Process(target=consumer_process, args=(bootstrap, topic, share, ready, go, results))
        for share in shares
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            if ready.get(timeout=READY_TIMEOUT_S) == -1:
                raise RuntimeError(results.get(timeout=10))
        load = load1()
        cpu0 = cpu_seconds(pid)
        go.set()
        collected: list[ConsumerResult] = []
        for _ in procs:
            item = results.get(timeout=CONSUME_DEADLINE_S + 60)
            if isinstance(item, str):
                raise RuntimeError(item)
            collected.append(item)
        broker_cpu = cpu_seconds(pid) - cpu0
    finally:
        for proc in procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return Run(
        peer,
        size,
        consumers,
        sum(r.records for r in collected),
        max(r.finished for r in collected) - min(r.started for r in collected),
        broker_cpu,
        sum(r.cpu_s for r in collected),
        max(r.longest_call_s for r in collected) * 1e3,
        load,
    )


# -- report -----------------------------------------------------------------------------


def print_run(r: Run, label: str = "") -> None:
    print(
        f"{label}{r.peer:<8} {r.size:>5} B  C={r.consumers}  {r.rate:>10,.0f} rec/s "
        f"{r.mbs:>7.1f} MB/s  broker {r.broker_cpu_per_gb:>6.2f} CPU s/GB "
        f"({r.broker_us_per_record:.2f} us/rec)  consumers {r.consumer_us_per_record:.2f} "
        f"CPU us/rec  client ceiling {r.client_ceiling:>10,.0f}  box ceiling "
        f"{r.box_ceiling:>10,.0f}  longest consume() {r.longest_call_ms:,.0f} ms  "
        f"load {r.load1:.2f}",
        flush=True,
    )


def median_run(runs: list[Run]) -> Run:
    """Each figure's median over ``runs`` (the same peer, size and C)."""
    first = runs[0]

    def med(values: list[float]) -> float:
        return float(statistics.median(values))

    records = first.records
    return Run(
        first.peer,
        first.size,
        first.consumers,
        records,
        med([r.wall_s / r.records for r in runs]) * records,
        med([r.broker_cpu_s / r.records for r in runs]) * records,
        med([r.consumer_cpu_s / r.records for r in runs]) * records,
        med([r.longest_call_ms for r in runs]),
        med([r.load1 for r in runs]),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--records", default="1000000,300000", help="per size, in order")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--consumers", default="1,2,4")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peers", default="riverbed,kafka")
    parser.add_argument("--profile", action="store_true", help="cProfile the Riverbed broker")
    parser.add_argument(
        "--baseline-src",
        metavar="DIR",
        help="add peer 'baseline': riverbed broker imported from DIR (a copy of src/)",
    )
    parser.add_argument(
        "--baseline-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the baseline broker (repeatable)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every run here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(s) for s in args.records.split(",")]
    if len(counts) == 1:
        counts *= len(sizes)
    if len(counts) != len(sizes):
        parser.error("--records needs one count, or one per size")
    consumer_counts = [int(c) for c in args.consumers.split(",")]
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if args.baseline_src and "baseline" not in peers:
        peers.append("baseline")
    if set(peers) - {"riverbed", "kafka", "baseline"}:
        parser.error("peers are riverbed, kafka and baseline")
    if "baseline" in peers and not args.baseline_src:
        parser.error("peer 'baseline' needs --baseline-src")

    print(
        f"{os.cpu_count()} CPUs, {args.partitions} partitions, consumers {consumer_counts}, "
        f"records {dict(zip(sizes, counts, strict=True))}, {args.repeat} runs each; "
        f"load average at start {os.getloadavg()}",
        flush=True,
    )
    ctx = multiprocessing.get_context("spawn")
    runs: list[Run] = []
    with contextlib.ExitStack() as stack:
        brokers: dict[str, tuple[str, int]] = {}
        for peer in peers:
            if peer == "riverbed":
                cm = riverbed_broker(args.profile)
            elif peer == "baseline":
                cm = riverbed_broker(
                    False, str(Path(args.baseline_src).resolve()), tuple(args.baseline_env)
                )
            else:
                cm = kafka_broker()
            brokers[peer] = stack.enter_context(cm)
        for size, count in zip(sizes, counts, strict=True):
            topic = f"scale-{size}-{int(time.time() * 1000)}"
            ranges: dict[str, list[tuple[int, int, int]]] = {}
            for peer, (bootstrap, _) in brokers.items():
                started = time.monotonic()
                fill(bootstrap, topic, args.partitions, count, size)
                ranges[peer] = partition_ranges(bootstrap, topic)
                print(
                    f"filled {peer} {topic}: {count:,} x {size} B in "
                    f"{time.monotonic() - started:.1f} s",
                    flush=True,
                )
            for consumers in consumer_counts:
                for i in range(args.repeat):
                    order = peers if i % 2 == 0 else peers[::-1]
                    for peer in order:
                        bootstrap, pid = brokers[peer]
                        run = consume_run(
                            ctx, peer, bootstrap, pid, topic, ranges[peer], size, consumers
                        )
                        print_run(run)
                        runs.append(run)
    report(runs, peers, args.repeat)
    if args.json:
        args.json.write_text(
            json.dumps({"cpus": os.cpu_count(), "runs": [asdict(r) for r in runs]}, indent=1)
        )


def report(runs: list[Run], peers: list[str], repeat: int) -> None:
    groups: dict[tuple[int, int, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.size, r.consumers, r.peer), []).append(r)
    medians = {key: median_run(group) for key, group in groups.items()}
    print(f"\nmedians of {repeat} runs:")
    for key in sorted(medians):
        print_run(medians[key], "  ")
    for other in ("kafka", "baseline"):
        if "riverbed" not in peers or other not in peers:
            continue
        print(f"\nriverbed/{other} (medians):")
        for size, consumers in sorted({(s, c) for s, c, _ in medians}):
            ours, theirs = medians[(size, consumers, "riverbed")], medians[(size, consumers, other)]
            print(
                f"  {size:>5} B  C={consumers}  rate x{ours.rate / theirs.rate:.2f}  "
                f"broker CPU/GB x{ours.broker_cpu_per_gb / theirs.broker_cpu_per_gb:.2f}  "
                f"(client ceiling {ours.client_ceiling:,.0f} / {theirs.client_ceiling:,.0f} "
                f"rec/s; box ceiling {ours.box_ceiling:,.0f} / {theirs.box_ceiling:,.0f})"
            )
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
