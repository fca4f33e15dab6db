"""Broker start-up: fsyncs and wall time to "answers Metadata", beside Apache Kafka's.

Figures printed (one line each, plus the machine's load average):

* **fresh start**: a new data dir, ``riverbed broker`` as a child process; wall time from
  ``Popen`` until a Metadata request is answered (confluent-kafka ``list_topics``), the
  median of ``--repeat`` (default 5) starts, with the broker's CPU seconds (user + system,
  ``/proc/PID/stat``) at that moment, which a loaded box inflates less than wall time, and
  the ``fsync``/``fdatasync`` calls it made until then (a second start under
  ``strace -f -c``, killed with SIGKILL once ready, so the stop's fsyncs do not count).
  ``--load`` repeats it while ``dd oflag=direct`` writes in parallel on the same disk.
* **clean restart over N GB**: ``--gb`` GiB produced (64 KiB records, 4 partitions),
  SIGTERM (clean stop), then the time to Metadata again: the median of
  ``--restart-repeat`` (default 3) clean stop/start cycles with the broker's CPU seconds;
  with ``--cold`` once more after evicting the data dir from the page cache
  (``posix_fadvise(DONTNEED)`` on each file, as after a reboot), with ``--load`` once
  more while ``dd oflag=direct`` writes on the same disk.
* **recovery after kill -9**: the same volume, SIGKILL right after the last produce,
  restart time to Metadata, and that time per GiB written since the last clean stop.
  At Riverbed's default flush policy (fsync before the ack) almost nothing is unflushed
  then: the restart re-checks what was written since the last recovery-point checkpoint.
* **recovery per GiB of unflushed tail** (``--tail-gb X``): X GiB produced into a topic
  that never fsyncs by itself (``flush.messages`` at its maximum, ``segment.bytes``
  2 GiB - 1, so no roll flushes either), SIGKILL, restart; the unflushed bytes are read
  from the data dir (past each partition's ``flushed.mark``) and the time is divided
  by them.
* **Apache Kafka**: the reference broker's start (:mod:`riverbed.testing.kafka_reference`)
  to its first served request, when its jars are available (else ``n/a``).

Run: ``.venv/bin/python bench/bench_startup.py [--gb 1] [--repeat 5] [--load] [--cold]
[--tail-gb 1] [--no-kafka]``.
The brokers' bytecode is cached (as in an installed riverbed, see :data:`BYTECODE_CACHE`)
unless ``--no-bytecode-cache``.  Uses a temporary directory under ``--dir`` (default
``/tmp``) and removes it.  No assertions.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.storage.flush_mark import read_flush_mark

CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "broker"]
RECORD = b"x" * 65536
PARTITIONS = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} (1/5 min), {os.cpu_count()} CPUs"


def wait_metadata(bootstrap: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Poll until a Metadata request is answered (the broker may not listen yet)."""
    deadline = time.monotonic() + timeout_s
    # librdkafka backs off exponentially (100 ms doubling up to 10 s) after each refused
    # connection: a start just slower than another then measured whole back-off steps
    # longer (1.7-2.0 s instead of 0.5 s for a restart after kill -9).  Poll every ~50 ms.
    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "log_level": 0,
            "reconnect.backoff.ms": 10,
            "reconnect.backoff.max.ms": 50,
        }
    )
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        try:
            admin.list_topics(timeout=0.5)
            return
        except Exception:
            time.sleep(0.01)
    raise RuntimeError(f"no Metadata answer within {timeout_s} s")


# The brokers' environment.  An installed riverbed has its bytecode compiled (pip writes
# the .pyc files); a checkout run with PYTHONDONTWRITEBYTECODE=1 (as some sandboxes set)
# compiles ~600 modules on every start: 0.8 s of CPU instead of 0.3 s.  So by default the
# brokers keep their bytecode in BYTECODE_CACHE (PYTHONPYCACHEPREFIX: the checkout stays
# clean) and one untimed start fills it; --no-bytecode-cache measures the compiling start.
BYTECODE_CACHE = Path.home() / ".cache" / "riverbed" / "bench-pycache"
BROKER_ENV: dict[str, str] = dict(os.environ)


def use_bytecode_cache() -> None:
    BROKER_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    BROKER_ENV["PYTHONPYCACHEPREFIX"] = str(BYTECODE_CACHE)


def start(
    data_dir: Path, port: int, log: Path, prefix: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], float]:
    """Start a broker; return it and the seconds until it answered Metadata."""
    args = [*(prefix or []), *CLI, "--data-dir", str(data_dir), "--listen", f"127.0.0.1:{port}"]
    args += ["--log-level", "WARNING"]
    began = time.perf_counter()
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=BROKER_ENV)
    wait_metadata(f"127.0.0.1:{port}", proc, 300)
    return proc, time.perf_counter() - began


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (``/proc/PID/stat`` fields 14, 15)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    proc.send_signal(sig)
    proc.wait(timeout=120)


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(c) for c in text]
    return found


def fresh_start_fsyncs(work: Path) -> int | None:
    """fsync+fdatasync calls of a fresh start until Metadata is answered (strace -c)."""
    if shutil.which("strace") is None:
        return None
    out = work / "strace.txt"
    port = free_port()
    prefix = ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(out), "--"]
    proc, _ = start(work / "traced", port, work / "broker.log", prefix)
    for child in children(proc.pid):  # the broker itself: SIGKILL, no stop path
        os.kill(child, signal.SIGKILL)
    proc.wait(timeout=60)
    total = 0
    for line in out.read_text().splitlines():
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)$", line)
        if m:
            total += int(m.group(1))
    return total


TAIL_TOPIC_CONFIG = {"flush.messages": str((1 << 63) - 1), "segment.bytes": str((1 << 31) - 1)}
"""The ``--tail-gb`` topic: no fsync by message count and no roll, so nothing is flushed."""


def produce(
    bootstrap: str, gib: float, topic: str = "bulk", config: dict[str, str] | None = None
) -> int:
    """Write ``gib`` GiB of 64 KiB records to ``topic``; returns the bytes written."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "acks": 1,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 262144,
        }
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=30).topics:
        new = NewTopic(topic, PARTITIONS, config=config or {})
        admin.create_topics([new])[topic].result(60)
    target = int(gib * (1 << 30))
    written = 0
    while written < target:
        try:
            producer.produce(topic, RECORD, partition=(written // len(RECORD)) % PARTITIONS)
            written += len(RECORD)
        except BufferError:
            producer.poll(0.05)
    if producer.flush(300) != 0:
        raise RuntimeError("produce did not finish")
    return written


def unflushed_bytes(data_dir: Path, topic: str) -> int:
    """Bytes of ``topic``'s segments past each partition's ``flushed.mark`` (all of a
    partition's bytes when it has none): what was never fsynced."""
    total = 0
    for part in data_dir.glob(f"{topic}-*"):
        mark = read_flush_mark(part)
        for seg in part.glob("*.log"):
            base, size = int(seg.name[:20]), seg.stat().st_size
            if mark is None or base > mark.segment_base:
                total += size
            elif base == mark.segment_base:
                total += max(size - mark.position, 0)
    return total


def evict(data_dir: Path) -> None:
    """Drop the data dir's (clean) pages from the page cache, as a reboot would."""
    for path in data_dir.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def disk_load(work: Path) -> subprocess.Popen[bytes]:
    """``dd oflag=direct`` writing 64 GiB-ish in a loop on the same disk (killed later)."""
    target = work / "dd.load"
    return subprocess.Popen(
        [
            "sh",
            "-c",
            f"while :; do dd if=/dev/zero of={target} bs=1M count=512 oflag=direct "
            "conv=fsync status=none; done",
        ]
    )


def kafka_start() -> str:
    try:
        from riverbed.testing.kafka_reference import KafkaReference

        began = time.perf_counter()
        with KafkaReference():
            took = time.perf_counter() - began
        return f"{took:.2f} s"
    except Exception as exc:  # no jars, no JVM
        return f"n/a ({type(exc).__name__})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=1.0, help="GiB for the restart figures")
    parser.add_argument("--repeat", type=int, default=5, help="fresh starts (median)")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="brokers compile their modules on every start (PYTHONDONTWRITEBYTECODE=1)",
    )
    parser.add_argument("--load", action="store_true", help="also start under dd load")
    parser.add_argument(
        "--restart-repeat", type=int, default=3, help="clean restarts over --gb (median)"
    )
    parser.add_argument(
        "--cold", action="store_true", help="also a clean restart with the page cache evicted"
    )
    parser.add_argument(
        "--tail-gb", type=float, default=0.0, help="GiB of unflushed tail before a kill -9"
    )
    parser.add_argument("--no-kafka", action="store_true", help="skip Apache Kafka's start")
    parser.add_argument("--dir", default="/tmp", help="where the temporary data dirs go")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-startup-", dir=args.dir))
    try:
        print(load_line())
        if args.no_bytecode_cache:
            BROKER_ENV["PYTHONDONTWRITEBYTECODE"] = "1"
            print("bytecode: compiled on every start (PYTHONDONTWRITEBYTECODE=1)")
        else:
            use_bytecode_cache()
            proc, _ = start(work / "warm-up", free_port(), work / "broker.log")
            stop(proc)
            print(f"bytecode: cached in {BYTECODE_CACHE} (filled by one untimed start)")
        fsyncs = fresh_start_fsyncs(work)
        walls: list[float] = []
        cpus: list[float] = []
        for i in range(args.repeat):
            proc, took = start(work / f"fresh{i}", free_port(), work / "broker.log")
            cpus.append(cpu_seconds(proc.pid))
            walls.append(took)
            stop(proc)
        print(
            f"fresh start: {statistics.median(walls):.2f} s to Metadata (median of "
            f"{args.repeat}: {' '.join(f'{w:.2f}' for w in walls)}), broker CPU "
            f"{statistics.median(cpus):.2f} s, {fsyncs} fsync+fdatasync (strace -f -c)  "
            f"[{load_line()}]"
        )
        if args.load:
            dd = disk_load(work)
            try:
                time.sleep(1.0)  # let dd reach the disk
                proc, took = start(work / "loaded", free_port(), work / "broker.log")
                stop(proc)
            finally:
                dd.kill()
                dd.wait()
            print(f"fresh start while dd oflag=direct writes: {took:.2f} s  [{load_line()}]")
        port = free_port()
        big = work / "big"
        proc, _ = start(big, port, work / "broker.log")
        written = produce(f"127.0.0.1:{port}", args.gb)
        restarts: list[float] = []
        cpus = []
        for _ in range(max(args.restart_repeat, 1)):
            stop(proc)
            proc, took = start(big, port, work / "broker.log")
            restarts.append(took)
            cpus.append(cpu_seconds(proc.pid))
        print(
            f"clean restart over {written / (1 << 30):.2f} GiB: {statistics.median(restarts):.2f}"
            f" s to Metadata (median of {len(restarts)}: {' '.join(f'{t:.2f}' for t in restarts)}"
            f"), broker CPU {statistics.median(cpus):.2f} s  [{load_line()}]"
        )
        if args.cold:
            stop(proc)
            evict(big)
            proc, took = start(big, port, work / "broker.log")
            print(
                f"clean restart, page cache evicted: {took:.2f} s, broker CPU "
                f"{cpu_seconds(proc.pid):.2f} s  [{load_line()}]"
            )
        if args.load:
            stop(proc)
            dd = disk_load(work)
            try:
                time.sleep(1.0)
                proc, took = start(big, port, work / "broker.log")
            finally:
                dd.kill()
                dd.wait()
            print(f"clean restart while dd oflag=direct writes: {took:.2f} s  [{load_line()}]")
        written = produce(f"127.0.0.1:{port}", args.gb) if args.gb > 0 else 0
        stop(proc, signal.SIGKILL)
        proc, took = start(big, port, work / "broker.log")
        gib = written / (1 << 30)
        print(
            f"restart after kill -9 with {gib:.2f} GiB written since the last clean stop "
            f"({unflushed_bytes(big, 'bulk') / (1 << 20):.1f} MiB of it unflushed): "
            f"{took:.2f} s ({took / max(gib, 1e-9):.2f} s/GiB), broker CPU "
            f"{cpu_seconds(proc.pid):.2f} s  [{load_line()}]"
        )
        if args.tail_gb > 0:
            produce(f"127.0.0.1:{port}", args.tail_gb, "tail", TAIL_TOPIC_CONFIG)
            stop(proc, signal.SIGKILL)
            tail = unflushed_bytes(big, "tail") / (1 << 30)
            proc, took = start(big, port, work / "broker.log")
            print(
                f"restart after kill -9 with {tail:.2f} GiB unflushed (past flushed.mark): "
                f"{took:.2f} s ({took / max(tail, 1e-9):.2f} s/GiB of unflushed tail), "
                f"broker CPU {cpu_seconds(proc.pid):.2f} s  [{load_line()}]"
            )
        stop(proc)
        if not args.no_kafka:
            print(f"Apache Kafka (kafka_reference) start to first served request: {kafka_start()}")
        print(load_line())
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
