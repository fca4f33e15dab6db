"""fsync hand-off: what a durable acknowledgement's fsync costs the event loop that waits for it
(issue 18.1, 18.2).

The broker's loop never waits on disk: it asks a helper thread to fdatasync (the
group-commit flusher) and resumes the request when the helper calls back with
``call_soon_threadsafe``.  That helper needs the GIL twice (before the fsync and after it)
while the loop thread holds it.  This measures one write + fdatasync + resumption of the
waiting coroutine, ``--n`` times per run, on a uvloop (as ``riverbed broker`` runs), under
three loads of the loop:

* ``idle``: the loop does nothing else;
* ``busy-python``: the loop runs Python in 0.3 ms slices, with no system call between
  them (``asyncio.sleep(0.001)`` after each);
* ``busy-io``: the loop serves a socketpair ping-pong, 0.3 ms of Python per message: like a
  broker's loop under load, it releases the GIL around a system call every ~0.3 ms.

and two ways to wait:

* ``thread``: ``ThreadPoolExecutor.submit(os.fdatasync)`` + ``call_soon_threadsafe`` (the
  broker's path today, without its bookkeeping);
* ``io_uring``: an ``IORING_OP_FSYNC`` (``IORING_FSYNC_DATASYNC``) submitted from the
  loop, its completion signalled on an eventfd the loop reads: no helper thread, no GIL
  hand-off.  Through the broker's own binding of the kernel's interface
  (``riverbed.storage.io_uring_abi``: Linux x86_64) and a kernel with io_uring allowed
  (``/proc/sys/kernel/io_uring_disabled`` 0); skipped otherwise.

plus ``fdatasync`` alone in the calling thread (the file system's floor).  The runs of
each case alternate (``--repeat`` rounds); per case the median of the runs' p50/p90/p99,
in ms.  The load average is printed with each round.

Run: ``.venv/bin/python bench/bench_fsync_handoff.py --repeat 5 --n 500``.  Files are
written under ``--dir`` (default: a temporary directory under ``/tmp``).  Exit status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvloop
from _bench_common import load1

from riverbed.storage.io_uring_abi import KernelRing, supported

CHUNK = b"x" * 65536
SLICE_S = 0.0003


def spin() -> None:
    """0.3 ms of Python, no system call."""
    end = time.perf_counter() + SLICE_S
    while time.perf_counter() < end:
        pass


async def busy_python(stop: asyncio.Event) -> None:
    while not stop.is_set():
        spin()
        await asyncio.sleep(0.001)


async def busy_io(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)

    def on_read() -> None:
        try:
            b.recv(4096)
        except BlockingIOError:
            return
        spin()
        if not stop.is_set():
            a.send(b"x")

    loop.add_reader(b.fileno(), on_read)
    a.send(b"x")
    await stop.wait()
    loop.remove_reader(b.fileno())
    a.close()
    b.close()


async def via_thread(fd: int, n: int) -> list[float]:
    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    samples = []
    for i in range(n):
        os.pwrite(fd, CHUNK, i * len(CHUNK))
        started = time.perf_counter()
        waiter = loop.create_future()

        def done(_f: object, waiter: asyncio.Future[None] = waiter) -> None:
            loop.call_soon_threadsafe(waiter.set_result, None)

        pool.submit(os.fdatasync, fd).add_done_callback(done)
        await waiter
        samples.append(time.perf_counter() - started)
    pool.shutdown()
    return samples


async def via_io_uring(fd: int, n: int) -> list[float]:
    loop = asyncio.get_running_loop()
    ring = KernelRing(8)
    efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    ring.register_eventfd(efd)
    waiters: dict[int, asyncio.Future[int]] = {}

    def on_ready() -> None:
        try:
            os.eventfd_read(efd)
        except BlockingIOError:
            return
        for key, res in ring.completions():
            waiters.pop(key).set_result(res)

    loop.add_reader(efd, on_ready)
    samples = []
    try:
        for i in range(n):
            os.pwrite(fd, CHUNK, i * len(CHUNK))
            started = time.perf_counter()
            waiters[i] = loop.create_future()
            ring.submit_fsync(fd, i)
            res = await waiters[i]
            if res != 0:
                raise OSError(-res, os.strerror(-res))
            samples.append(time.perf_counter() - started)
    finally:
        loop.remove_reader(efd)
        ring.close()
        os.close(efd)
    return samples


async def alone(fd: int, n: int) -> list[float]:
    samples = []
    for i in range(n):
        os.pwrite(fd, CHUNK, i * len(CHUNK))
        started = time.perf_counter()
        os.fdatasync(fd)
        samples.append(time.perf_counter() - started)
    return samples


WAITS: dict[str, Callable[[int, int], Awaitable[list[float]]]] = {
    "thread": via_thread,
    "io_uring": via_io_uring,
    "fdatasync alone": alone,
}

LOADS: dict[str, Callable[[asyncio.Event], Awaitable[None]] | None] = {
    "idle": None,
    "busy-python": busy_python,
    "busy-io": busy_io,
}


def io_uring_usable() -> str | None:
    """None if the io_uring rows can run, else why not."""
    why = supported()
    if why is not None:
        return why
    try:
        disabled = Path("/proc/sys/kernel/io_uring_disabled").read_text().strip()
    except OSError:
        return None
    return None if disabled == "0" else "io_uring disabled (/proc/sys/kernel/io_uring_disabled)"


async def one_run(directory: str, load: str, wait: str, n: int) -> list[float]:
    path = os.path.join(directory, f"{load}-{wait}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    stop = asyncio.Event()
    background = LOADS[load]
    task = asyncio.ensure_future(background(stop)) if background is not None else None
    try:
        return await WAITS[wait](fd, n)
    finally:
        stop.set()
        if task is not None:
            await task
        os.close(fd)
        os.unlink(path)


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    s = sorted(samples)
    return (
        statistics.median(s) * 1e3,
        s[int(len(s) * 0.9)] * 1e3,
        s[min(len(s) - 1, int(len(s) * 0.99))] * 1e3,
    )


async def main(args: argparse.Namespace) -> None:
    why_not = io_uring_usable()
    waits = ["thread"] + (["io_uring"] if why_not is None else [])
    if why_not is not None:
        print(f"io_uring rows skipped: {why_not}")
    cases = [(load, wait) for load in LOADS for wait in waits] + [("idle", "fdatasync alone")]
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {c: [] for c in cases}
    directory = tempfile.mkdtemp(prefix="rb-fsync-handoff-", dir=args.dir)
    print(
        f"{args.n} x (write 64 KiB + fdatasync + resume) per run, uvloop, "
        f"switch interval {sys.getswitchinterval() * 1e3:.1f} ms, files in {directory}"
    )
    for round_ in range(args.repeat):
        print(f"round {round_ + 1}/{args.repeat}: load1 {load1():.2f}", flush=True)
        for case in cases:
            results[case].append(percentiles(await one_run(directory, *case, args.n)))
    os.rmdir(directory)
    print(f"load1 after: {load1():.2f}")
    print(f"{'loop':12s} {'wait':16s} {'p50':>8s} {'p90':>8s} {'p99':>8s}  (ms, medians of runs)")
    for (load, wait), runs in results.items():
        p50, p90, p99 = (statistics.median(r[i] for r in runs) for i in range(3))
        print(f"{load:12s} {wait:16s} {p50:8.3f} {p90:8.3f} {p99:8.3f}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500, help="fsyncs per run")
    parser.add_argument("--repeat", type=int, default=5, help="rounds, cases alternating")
    parser.add_argument("--dir", default=None, help="where the files go (default /tmp)")
    parser.add_argument(
        "--switch-interval-ms",
        type=float,
        default=0.5,
        help="sys.setswitchinterval, as riverbed broker sets it (default 0.5)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    options = parse()
    sys.setswitchinterval(options.switch_interval_ms / 1000)
    uvloop.run(main(options))
