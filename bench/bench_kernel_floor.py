"""The kernel's share of a produce: CPU per GB that any broker on this box pays to take
bytes off a TCP socket and make them durable, beside Riverbed's broker in the same run.

Issue 18.1 asks for produce at 1 KiB >= 0.85x the client's ceiling (librdkafka's mock
cluster, which keeps nothing).  Client and broker share the box's cores, so the broker's
CPU per GB is what decides the ratio; this benchmark splits it into what the kernel costs
a minimal receiver and what Riverbed adds.

Peers (each a child process serving one TCP connection on 127.0.0.1; the sender is this
process, ``socket.sendall`` of 1 MiB chunks of random bytes):

* ``recv``  - ``recv_into`` a 1 MiB buffer, nothing kept: the TCP receive path alone;
* ``write`` - and ``os.write`` each chunk to a file on the temp directory's disk: plus the
  page-cache copy (Kafka's acknowledgement point);
* ``fsync`` - and ``fdatasync`` every ``--sync-bytes`` (default 1 MiB, about what one of
  Riverbed's group commits covers at saturation): plus write-back before the ack, what
  Riverbed's default durability costs;
* ``riverbed`` - ``riverbed broker`` (subprocess, default settings) receiving the same
  number of value bytes of ``--size``-byte records from confluent-kafka (acks=all,
  idempotent, linger.ms=5, the producer of ``bench_produce_consume.py``).

Each peer's figure is its process's user and system CPU seconds (``/proc/PID/stat``, all
threads) over the transfer, per 10^9 bytes; the runs alternate (``--repeat`` rounds of all
peers), medians are printed with the load average.  The minimal receivers read 1 MiB per
call and do no Kafka work at all (no parsing, CRC, offsets, indexes, responses): their
figures are floors, not a broker.

Run: ``.venv/bin/python bench/bench_kernel_floor.py [--gigabytes 1] [--size 1024]
[--repeat 5] [--sync-bytes 1048576] [--peers recv,write,fsync,riverbed]``.
Exit status 0 (this is a measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from _bench_common import BROKER_PIDS, cpu_seconds, load1, riverbed_subprocess, write_back
from bench_produce_consume import create_topic, produce

CHUNK = 1 << 20

# The receiver child: argv = mode, directory, sync_bytes; prints its port, then after the
# peer closes "bytes seconds".  CPU is read by the parent from /proc.
RECEIVER = r"""
import os, socket, sys, time
mode, directory, sync_bytes = sys.argv[1], sys.argv[2], int(sys.argv[3])
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
sys.stdin.readline()  # the parent read our CPU before the transfer
conn, _ = server.accept()
conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
buf = bytearray(1 << 20)
view = memoryview(buf)
fd = os.open(os.path.join(directory, "floor.log"), os.O_WRONLY | os.O_CREAT, 0o644) \
    if mode != "recv" else -1
total = unsynced = 0
start = time.perf_counter()
while True:
    n = conn.recv_into(buf)
    if not n:
        break
    total += n
    if fd >= 0:
        written = 0
        while written < n:
            written += os.write(fd, view[written:n])
        if mode == "fsync":
            unsynced += n
            if unsynced >= sync_bytes:
                os.fdatasync(fd)
                unsynced = 0
if fd >= 0:
    if mode == "fsync":
        os.fdatasync(fd)
    os.close(fd)
print(total, time.perf_counter() - start, flush=True)
sys.stdin.readline()  # stay alive until the parent has read our CPU
"""


def run_receiver(mode: str, nbytes: int, sync_bytes: int) -> tuple[float, float]:
    """CPU seconds and wall seconds of a minimal receiver taking ``nbytes`` in ``mode``."""
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as directory:
        child = subprocess.Popen(
            [sys.executable, "-c", RECEIVER, mode, directory, str(sync_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None
        try:
            port = int(child.stdout.readline())
            cpu0 = cpu_seconds(child.pid)
            child.stdin.write("go\n")
            child.stdin.flush()
            block = os.urandom(CHUNK)
            with socket.create_connection(("127.0.0.1", port)) as conn:
                left = nbytes
                while left > 0:
                    conn.sendall(block[: min(CHUNK, left)])
                    left -= CHUNK
            received, seconds = child.stdout.readline().split()
            cpu = cpu_seconds(child.pid) - cpu0
            if int(received) != nbytes:
                raise RuntimeError(f"{mode}: received {received} of {nbytes} bytes")
            child.stdin.write("done\n")
            child.stdin.flush()
        finally:
            child.wait(30)
    return cpu, float(seconds)


def run_riverbed(bootstrap: str, nbytes: int, size: int, partitions: int) -> tuple[float, float]:
    """Broker CPU seconds and produce seconds for ``nbytes`` of ``size``-byte values."""
    topic = f"floor-{size}-{time.time_ns()}"
    create_topic(bootstrap, topic, partitions)
    seconds, _, cpu = produce(bootstrap, topic, nbytes // size, size, BROKER_PIDS[bootstrap])
    return cpu, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--gigabytes", type=float, default=1.0, help="bytes per run, 10^9")
    parser.add_argument("--size", type=int, default=1024, help="riverbed peer's value size")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sync-bytes", type=int, default=1 << 20)
    parser.add_argument("--peers", default="recv,write,fsync,riverbed")
    parser.add_argument("--no-write-back", action="store_true")
    args = parser.parse_args(argv)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = set(peers) - {"recv", "write", "fsync", "riverbed"}
    if unknown:
        parser.error(f"unknown peers {sorted(unknown)}")
    nbytes = int(args.gigabytes * 1e9)
    print(
        f"{nbytes / 1e9:.2f} GB per run, {os.cpu_count()} CPUs, fdatasync every "
        f"{args.sync_bytes:,} B (fsync peer), riverbed values of {args.size} B, "
        f"load {load1():.1f}"
    )
    figures: dict[str, list[tuple[float, float]]] = {p: [] for p in peers}
    broker = riverbed_subprocess(False) if "riverbed" in peers else contextlib.nullcontext("")
    with broker as bootstrap:
        for _ in range(args.repeat):
            for peer in peers:
                if not args.no_write_back:
                    write_back()
                if peer == "riverbed":
                    cpu, seconds = run_riverbed(bootstrap, nbytes, args.size, args.partitions)
                else:
                    cpu, seconds = run_receiver(peer, nbytes, args.sync_bytes)
                figures[peer].append((cpu, seconds))
                print(
                    f"{peer:<9} CPU {cpu / (nbytes / 1e9):5.2f} s/GB  "
                    f"{nbytes / seconds / 1e6:7.1f} MB/s  load {load1():.1f}",
                    flush=True,
                )
    print(f"\nmedian of {args.repeat} runs, load {load1():.1f}:")
    medians = {
        peer: statistics.median(cpu for cpu, _ in runs) / (nbytes / 1e9)
        for peer, runs in figures.items()
    }
    for peer, runs in figures.items():
        rate = statistics.median(nbytes / seconds / 1e6 for _, seconds in runs)
        print(f"{peer:<9} CPU {medians[peer]:5.2f} s/GB  {rate:7.1f} MB/s")
    if "riverbed" in medians and "fsync" in medians:
        print(
            f"riverbed beyond the fsync floor: {medians['riverbed'] - medians['fsync']:.2f} s/GB "
            f"(x{medians['riverbed'] / medians['fsync']:.2f} the floor)"
        )


if __name__ == "__main__":
    main()
