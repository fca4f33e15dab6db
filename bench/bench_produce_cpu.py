"""Broker CPU seconds per GB produced, brokers alternating run by run (issue 18.1).

Starts one ``riverbed broker`` subprocess per ``--src LABEL=DIR`` (``DIR`` empty: the
installed ``riverbed``; else ``PYTHONPATH=DIR``, e.g. a ``git worktree`` of an older
commit's ``src/``), then ``--repeat`` rounds: in each round every broker gets a fresh
topic (``--partitions``) and the same produce workload as ``bench_produce_consume.py``
(one idempotent confluent-kafka producer, ``acks=all``, ``linger.ms=5``, 1,000 warm-up
messages not counted), one broker after the other, the order flipping every round.  Per
run: msg/s, and the broker process's user + system CPU seconds (``/proc/PID/stat``, all
threads) over the produce phase per 10^9 bytes of values; then the median per broker and
size.  Produce only: no consume phase, so the CPU is the produce path's.

Alternating runs matter on a shared box: the CPU per GB moves with the load (a starved
client sends smaller requests), so before/after figures are only comparable run beside
run.  Keep the volume well inside the page cache (every run's topic stays until the end):
once the box reclaims memory, the reclaim is charged to the writer and the CPU per GB
climbs with every run (seen: 1 -> 3 s/GB over 20 GB of 10 KiB).  ``--perf LABEL``
records that broker with ``perf record -g`` (``perf`` must be installed) into
``perf-LABEL-SIZES.data`` in the current directory.

Run: ``.venv/bin/python bench/bench_produce_cpu.py --sizes 1024 --messages 400000
--repeat 5 --src before=/tmp/rb-base/src --src after=``.  Exit status 0 (a measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import time

from bench_produce_consume import BROKER_PIDS, create_topic, produce, riverbed_subprocess


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1024", help="value sizes in bytes, comma-separated")
    parser.add_argument("--messages", type=int, default=400_000, help="values per run")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (each broker once)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument(
        "--src",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="a broker to measure (DIR empty: the installed riverbed); repeatable",
    )
    parser.add_argument("--perf", metavar="LABEL", help="perf record this broker")
    args = parser.parse_args(argv)
    brokers = [s.split("=", 1) for s in args.src] or [["riverbed", ""]]
    if any(len(b) != 2 for b in brokers):
        parser.error("--src takes LABEL=DIR")
    sizes = [int(s) for s in args.sizes.split(",")]
    cpu_per_gb: dict[tuple[str, int], list[float]] = {}
    print(
        f"{args.messages:,} messages per run, {args.partitions} partitions, "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with contextlib.ExitStack() as stack:
        boot = {
            label: stack.enter_context(riverbed_subprocess(False, src or None))
            for label, src in brokers
        }
        recorder = None
        if args.perf:
            pid = BROKER_PIDS[boot[args.perf]]
            out = f"perf-{args.perf}-{args.sizes}.data"
            cmd = ["perf", "record", "-F", "997", "-g", "-o", out, "-p", str(pid)]
            recorder = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for round_ in range(args.repeat):
            for size in sizes:
                # ABBA: the order flips every round, so that neither broker always runs
                # right after the other's writes (their write-back still under way).
                order = brokers if round_ % 2 == 0 else brokers[::-1]
                for label, _src in order:
                    bootstrap = boot[label]
                    topic = f"cpu-{size}-{label}-{round_}-{int(time.time() * 1000)}"
                    create_topic(bootstrap, topic, args.partitions)
                    elapsed, _lat, cpu = produce(
                        bootstrap, topic, args.messages, size, BROKER_PIDS[bootstrap]
                    )
                    per_gb = cpu / (args.messages * size / 1e9)
                    cpu_per_gb.setdefault((label, size), []).append(per_gb)
                    print(
                        f"{label:<10} {size:>6} B {args.messages / elapsed:>10,.0f} msg/s  "
                        f"broker CPU {cpu:.2f} s = {per_gb:.2f} s/GB  "
                        f"load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            recorder.wait()
    print("medians, broker CPU s/GB produced:")
    for (label, size), runs in cpu_per_gb.items():
        spread = " ".join(f"{r:.2f}" for r in runs)
        print(f"  {label:<10} {size:>6} B  {statistics.median(runs):.2f}  (runs {spread})")


if __name__ == "__main__":
    main()
