"""Broker CPU seconds per GB produced, brokers alternating run by run (issue 18.1).

Starts one ``riverbed broker`` subprocess per ``--src LABEL=DIR`` (``DIR`` empty: the
installed ``riverbed``; else ``PYTHONPATH=DIR``, e.g. a ``git worktree`` of an older
commit's ``src/``), then ``--repeat`` rounds: in each round every broker gets a fresh
topic (``--partitions``) and the same produce workload as ``bench_produce_consume.py``
(one idempotent confluent-kafka producer, ``acks=all``, ``linger.ms=5``, 1,000 warm-up
messages not counted), one broker after the other, the order flipping every round.  Per
run: msg/s, and the broker process's user + system CPU seconds (``/proc/PID/stat``, all
threads) over the produce phase per 10^9 bytes of values; then the median per broker and
size.  Produce only: no consume phase, so the CPU is the produce path's.  Each run also
splits the broker's CPU between its event-loop thread (the main thread) and the other
threads (the fsync helpers, the flusher) from ``/proc/PID/task/*/schedstat`` (run time in
ns, over the warm-up too: 1,000 messages), and counts the broker's context switches per GB
(voluntary + involuntary, all threads, ``/proc/PID/task/*/status``): mostly GIL hand-offs
between the loop and the helpers, and their wake-ups.  With two or more brokers it also
prints, per broker, the median over rounds of its CPU per GB divided by the first
broker's in the same round (a paired ratio: a round run at a higher load moves both).

Alternating runs matter on a shared box: the CPU per GB moves with the load (a starved
client sends smaller requests), so before/after figures are only comparable run beside
run.  Keep the volume well inside the page cache (every run's topic stays until the end):
once the box reclaims memory, the reclaim is charged to the writer and the CPU per GB
climbs with every run (seen: 1 -> 3 s/GB over 20 GB of 10 KiB; on a box shared with other
work, 1 -> 2.5 s/GB after ~3.5 GB of 1 KiB, every broker alike).  ``--delete-topics``
deletes each run's topic after it and waits until the broker has removed its partition
directories (outside the measured window), so the page cache only ever holds one run.
``--perf LABEL`` records that broker with ``perf record -g`` (``perf`` must be installed) into
``perf-LABEL-SIZES.data`` in the current directory.

``--micro`` runs, instead, two in-process measurements of this thread's CPU per operation
(``time.thread_time``: user + system), the old way beside the new: writing the flush mark
with open/pwrite/close vs :class:`~riverbed.storage.flush_mark.FlushMarkFile`; and taking
a 1 MiB in-place frame buffer and filling it as the socket would, ``bytearray(size)`` (zero
filled) vs :func:`riverbed.broker.connection._take_frame` (reused), each after 64 MiB of
other writes (untimed) so that the caches are as cold as in the broker.

Run: ``.venv/bin/python bench/bench_produce_cpu.py --sizes 1024 --messages 400000
--repeat 5 --src before=/tmp/rb-base/src --src after=``, ``... --micro``.  Exit status 0 (a
measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench_produce_consume import BROKER_PIDS, create_topic, produce, riverbed_subprocess
from confluent_kafka.admin import AdminClient

DELETE_DEADLINE_S = 120


def data_dir(pid: int) -> Path:
    """The ``--data-dir`` of the ``riverbed broker`` process ``pid`` (its command line)."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return Path(args[args.index(b"--data-dir") + 1].decode())


def delete_topic(bootstrap: str, topic: str, directory: Path) -> None:
    """Delete ``topic`` and wait until no directory of it is left under ``directory``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic]).values():
        future.result(30)
    deadline = time.monotonic() + DELETE_DEADLINE_S
    while any(topic in p.name for p in directory.rglob(f"*{topic}*")):
        if time.monotonic() > deadline:
            sys.exit(
                f"bench_produce_cpu: {topic}'s files still in {directory} after "
                f"{DELETE_DEADLINE_S}s"
            )
        time.sleep(0.05)  # polling interval; the condition is the directories' removal


def thread_counters(pid: int) -> tuple[float, float, int]:
    """CPU seconds of ``pid``'s main thread (the event loop), of its other live threads,
    and the context switches of all of them (threads that exited are not counted)."""
    loop = others = 0.0
    switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            run_ns = int((task / "schedstat").read_text().split()[0])
            status = (task / "status").read_text()
        except (OSError, ValueError):
            continue  # the thread exited meanwhile
        if task.name == str(pid):
            loop += run_ns / 1e9
        else:
            others += run_ns / 1e9
        for line in status.splitlines():
            if "ctxt_switches:" in line:
                switches += int(line.split()[1])
    return loop, others, switches


def micro(rounds: int = 7) -> None:
    """See ``--micro`` in the module docstring."""
    import tempfile

    from riverbed.broker import connection
    from riverbed.storage.flush_mark import FLUSH_MARK_FILE, FlushMark, FlushMarkFile, encode

    directory = Path(tempfile.mkdtemp(prefix="bench-mark-"))
    path = directory / FLUSH_MARK_FILE
    mark_file = FlushMarkFile(directory)

    def mark_old(n: int) -> None:  # the flush mark's write before 32d2ae1
        for i in range(n):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, encode(FlushMark(0, i, i)), 0)
            finally:
                os.close(fd)

    def mark_new(n: int) -> None:
        for i in range(n):
            mark_file.write(FlushMark(0, i, i))

    size = 1 << 20
    junk = bytearray(64 << 20)
    data = os.urandom(size)

    def frames(take: Callable[[], memoryview], n: int, keep: bool) -> float:
        total = 0.0
        for _ in range(n):
            junk[:] = junk  # other work between frames: the caches go cold (untimed)
            start = time.thread_time()
            view = take()
            view[:] = data  # as the socket fills it
            total += time.thread_time() - start
            buf = view.obj
            del view
            if keep:  # as the connection does once the frame is received
                connection._keep_frame(buf)  # type: ignore[arg-type]
            del buf
        return total

    def timed(fn: Callable[[int], object], n: int) -> float:
        start = time.thread_time()
        fn(n)
        return time.thread_time() - start

    cases: dict[str, list[float]] = {}
    for _ in range(rounds):
        for label, seconds, n in (
            ("flush mark: open/pwrite/close", timed(mark_old, 5000), 5000),
            ("flush mark: FlushMarkFile", timed(mark_new, 5000), 5000),
            (
                "1 MiB frame: bytearray + fill",
                frames(lambda: memoryview(bytearray(size)), 200, False),
                200,
            ),
            (
                "1 MiB frame: _take_frame + fill",
                frames(lambda: connection._take_frame(size), 200, True),
                200,
            ),
        ):
            cases.setdefault(label, []).append(seconds / n * 1e6)
        connection._frame_pool().clear()
    mark_file.close()
    print(f"load {os.getloadavg()[0]:.1f}; CPU us per operation, median of {rounds} (runs)")
    for label, runs in cases.items():
        spread = " ".join(f"{r:.2f}" for r in runs)
        print(f"  {label:<32} {statistics.median(runs):8.2f}  ({spread})")


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
    parser.add_argument("--micro", action="store_true", help="in-process measurements only")
    parser.add_argument(
        "--delete-topics",
        action="store_true",
        help="delete each run's topic after it (and wait for its files to go)",
    )
    args = parser.parse_args(argv)
    if args.micro:
        micro()
        return
    brokers = [s.split("=", 1) for s in args.src] or [["riverbed", ""]]
    if any(len(b) != 2 for b in brokers):
        parser.error("--src takes LABEL=DIR")
    sizes = [int(s) for s in args.sizes.split(",")]
    cpu_per_gb: dict[tuple[str, int], list[float]] = {}
    # per broker and size: (loop s/GB, other threads s/GB, context switches per GB) per run
    split_per_gb: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    # per broker and size: its CPU per GB over the first broker's, round by round
    paired: dict[tuple[str, int], list[float]] = {}
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
                this_round: dict[str, float] = {}
                for label, _src in order:
                    bootstrap = boot[label]
                    topic = f"cpu-{size}-{label}-{round_}-{int(time.time() * 1000)}"
                    create_topic(bootstrap, topic, args.partitions)
                    pid = BROKER_PIDS[bootstrap]
                    before = thread_counters(pid)
                    elapsed, _lat, cpu = produce(bootstrap, topic, args.messages, size, pid)
                    after = thread_counters(pid)
                    gb = args.messages * size / 1e9
                    per_gb = cpu / gb
                    split = (
                        (after[0] - before[0]) / gb,
                        (after[1] - before[1]) / gb,
                        (after[2] - before[2]) / gb,
                    )
                    cpu_per_gb.setdefault((label, size), []).append(per_gb)
                    this_round[label] = per_gb
                    split_per_gb.setdefault((label, size), []).append(split)
                    print(
                        f"{label:<10} {size:>6} B {args.messages / elapsed:>10,.0f} msg/s  "
                        f"broker CPU {cpu:.2f} s = {per_gb:.2f} s/GB "
                        f"(loop {split[0]:.2f}, others {split[1]:.2f}; "
                        f"{split[2] / 1000:.1f}k switches/GB)  "
                        f"load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
                    if args.delete_topics:
                        delete_topic(bootstrap, topic, data_dir(pid))
                first = this_round[brokers[0][0]]
                for label, _src in brokers[1:]:
                    paired.setdefault((label, size), []).append(this_round[label] / first)
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            recorder.wait()
    print("medians, broker CPU s/GB produced:")
    for (label, size), runs in cpu_per_gb.items():
        spread = " ".join(f"{r:.2f}" for r in runs)
        print(f"  {label:<10} {size:>6} B  {statistics.median(runs):.2f}  (runs {spread})")
    print("medians per GB: loop thread s, other threads s, context switches")
    for (label, size), splits in split_per_gb.items():
        loop, others, switches = (statistics.median(col) for col in zip(*splits, strict=True))
        print(f"  {label:<10} {size:>6} B  {loop:.2f}  {others:.2f}  {switches / 1000:.1f}k")
    if paired:
        print(f"paired: CPU per GB / {brokers[0][0]}'s in the same round, median (rounds)")
    for (label, size), ratios in paired.items():
        spread = " ".join(f"{r:.2f}" for r in ratios)
        print(f"  {label:<10} {size:>6} B  x{statistics.median(ratios):.3f}  ({spread})")


if __name__ == "__main__":
    main()
