"""Soak: does a ``riverbed broker`` stay flat in memory under a long rate-limited load?

``riverbed broker`` runs in a subprocess on a temp data dir.  One idempotent producer
(``acks=all``, ``linger.ms=5``) sends ``--size``-byte values at ``--rate`` msg/s (pick
about half of the peak that ``bench/bench_produce_consume.py`` measures on the same box)
to a ``--partitions`` topic (``segment.bytes`` 64 MiB, ``retention.bytes`` 256 MiB per
partition, so the disk use stays bounded), and one consumer (assigned every partition,
from the start) reads them back, both in this process, for ``--minutes`` (default 30).  Every
``--interval`` seconds (default 10) the broker's RSS (``/proc/PID/status`` VmRSS) and CPU
seconds (``/proc/PID/stat`` utime+stime) are sampled, with the 1-minute load average.

Printed at the end: RSS at start (the first sample after ``--warmup-s``, default 60 s, so
start-up allocation is not counted as growth), median and end; the verdict
``RSS flat within 10 %`` when the last sample is within 10 % of the first post-warm-up
sample, else ``RSS GREW``; broker CPU seconds per GB produced (values only, 10^9 bytes);
messages produced and consumed, and the send rate reached.  ``--json PATH`` also writes
every sample.  Exit status 0 whether or not RSS stays flat (this is a measurement).

Run: ``.venv/bin/python bench/bench_soak.py [--minutes 30] [--rate 5000] [--size 1024]``.
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
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import BROKER_PIDS, cpu_seconds, load1, riverbed_subprocess
from bench_produce_consume import durable_producer, produce_paced


@dataclass(frozen=True, slots=True)
class Sample:
    t_s: float  # seconds since the load started
    rss_mib: float
    cpu_s: float  # broker user + system CPU seconds since it started
    produced: int
    consumed: int
    load1: float


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` in MiB (``VmRSS`` of ``/proc/PID/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


@contextlib.contextmanager
def broker() -> Iterator[tuple[str, int]]:
    """``riverbed broker`` on a temp dir: yields (bootstrap, pid); SIGTERM at exit."""
    with riverbed_subprocess(False) as bootstrap:
        yield bootstrap, BROKER_PIDS[bootstrap]


class Counters:
    def __init__(self) -> None:
        self.produced = 0
        self.consumed = 0
        self.errors: list[str] = []


def run_consumer(
    bootstrap: str, topic: str, partitions: int, stop: threading.Event, c: Counters
) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"soak-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 10,
            "fetch.queue.backoff.ms": 10,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        while not stop.is_set():
            for msg in consumer.consume(10_000, 0.2):
                if msg.error() is not None:
                    c.errors.append(str(msg.error()))
                else:
                    c.consumed += 1
    finally:
        consumer.close()


def run_producer(
    bootstrap: str, topic: str, rate: float, size: int, stop: threading.Event, c: Counters
) -> None:
    producer = durable_producer(bootstrap)

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            c.errors.append(str(err))
        else:
            c.produced += 1

    produce_paced(producer, topic, os.urandom(size), rate, on_delivery, lambda: not stop.is_set())
    producer.flush(60)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=5000.0, help="messages per second")
    parser.add_argument("--size", type=int, default=1024, help="value bytes")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--warmup-s", type=float, default=60.0)
    parser.add_argument("--segment-bytes", type=int, default=64 << 20)
    parser.add_argument("--retention-bytes", type=int, default=256 << 20, help="per partition")
    parser.add_argument("--json", type=Path, help="write every sample here")
    args = parser.parse_args(argv)

    print(
        f"soak: {args.minutes:g} min, {args.rate:,.0f} msg/s of {args.size} B, "
        f"{args.partitions} partitions, {os.cpu_count()} CPUs, load {load1():.1f}",
        flush=True,
    )
    samples: list[Sample] = []
    c = Counters()
    with broker() as (bootstrap, pid):
        topic = f"soak-{int(time.time())}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        # Bounded retention keeps the disk use of a long run bounded (and exercises segment
        # rolling and deletion, which a leak could hide in).
        new = NewTopic(
            topic,
            args.partitions,
            1,
            config={
                "segment.bytes": str(args.segment_bytes),
                "retention.bytes": str(args.retention_bytes),
            },
        )
        for future in admin.create_topics([new]).values():
            future.result(60)
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=run_producer, args=(bootstrap, topic, args.rate, args.size, stop, c)
            ),
            threading.Thread(
                target=run_consumer, args=(bootstrap, topic, args.partitions, stop, c)
            ),
        ]
        for t in threads:
            t.start()
        start = time.monotonic()
        end = start + args.minutes * 60
        try:
            while True:
                now = time.monotonic()
                s = Sample(
                    now - start, rss_mib(pid), cpu_seconds(pid), c.produced, c.consumed, load1()
                )
                samples.append(s)
                print(
                    f"t={s.t_s:7.0f} s  rss {s.rss_mib:7.1f} MiB  cpu {s.cpu_s:8.1f} s  "
                    f"produced {s.produced:>11,}  consumed {s.consumed:>11,}  load {s.load1:.1f}",
                    flush=True,
                )
                if now >= end:
                    break
                time.sleep(min(args.interval, max(0.0, end - now)))
        finally:
            stop.set()
            for t in threads:
                t.join(120)
    steady = [s for s in samples if s.t_s >= args.warmup_s] or samples
    first, last = steady[0], steady[-1]
    median = statistics.median(s.rss_mib for s in steady)
    growth = (last.rss_mib - first.rss_mib) / first.rss_mib
    # Counted up to the last sample, like the CPU seconds (the final flush comes later).
    produced = samples[-1].produced
    gb = produced * args.size / 1e9
    cpu = samples[-1].cpu_s - samples[0].cpu_s
    elapsed = samples[-1].t_s
    print(
        f"RSS start {first.rss_mib:.1f} MiB (t={first.t_s:.0f} s)  median {median:.1f} MiB  "
        f"end {last.rss_mib:.1f} MiB  peak {max(s.rss_mib for s in samples):.1f} MiB  "
        f"({growth:+.1%})"
    )
    print("RSS flat within 10 %" if abs(growth) <= 0.10 else "RSS GREW (more than 10 %)")
    print(
        f"produced {produced:,} by the last sample ({gb:.2f} GB, "
        f"{produced / max(elapsed, 1e-9):,.0f} msg/s; {c.produced:,} after the final flush), "
        f"consumed {samples[-1].consumed:,}, errors {len(c.errors)} {c.errors[:3]}"
    )
    print(
        f"broker CPU {cpu:.1f} s = {cpu / gb if gb else float('nan'):.1f} CPU s per GB produced; "
        f"load median {statistics.median(s.load1 for s in samples):.1f}"
    )
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in samples], indent=1))


if __name__ == "__main__":
    main()
