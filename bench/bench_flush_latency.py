"""fsync wait latency: what one acks=all wait on the group-commit flusher costs (issues 9, 18.2).

Every acks=all answer and every transaction step waits for an fsync through
:class:`~riverbed.storage.flusher.GroupCommitFlusher`.  This measures, each ``--n``
times (a ``--records``-record batch of 100 B values per append, default 25, files in
``--dir``; 1,000 records make a ~100 KB flush, as Riverbed's at 120k msg/s of 100 B over
4 partitions, 9,000 a ~1 MB one, the most under ``max.message.bytes``):

* ``raw fdatasync`` / ``raw fsync``: ``os.write`` of one batch's bytes then the sync, on
  one file: the floor the file system sets;
* ``raw 4 threads``: 4 threads each write+fdatasync their own file, started together
  (a barrier), until the last ends: the floor of a 4-partition round;
* ``raw pre-zeroed`` / ``raw 4 pre-zeroed``: the same two, but each write overwrites a
  region of the file that was written with zeros and fdatasynced first (the file's size
  and blocks do not change: the sync flushes data only, no journal commit; what
  :mod:`riverbed.storage.preallocate` gives the logs);
* ``log.flush direct``: append then ``PartitionLog.flush()`` in the calling thread (a log
  under the OS policy, so no flusher thread flushes it meanwhile): the append, the fsync
  and the flush body (index entries, flush mark), no thread hand-off;
* ``1 log`` / ``4 logs``: append (to each log) then wait on ``flush_future`` (blocking
  ``result()``): the flusher's hand-offs on top;
* ``1 log busy`` / ``4 logs busy``: the same, the waiting thread spinning in Python
  until the futures are done (a busy event loop: it gives the GIL up only when the
  interpreter forces a switch, so every GIL hand-back in a helper's flush can wait up to
  ``sys.getswitchinterval()``, 5 ms);
* ``1 log uvloop`` / ``4 logs uvloop``: the same awaited from a uvloop through
  ``asyncio.wrap_future``, as the broker's handlers wait.

Per case: p50, p90, p99 in ms.  ``--src LABEL=DIR`` (repeatable) runs the measurement in
a child process per label with ``PYTHONPATH=DIR`` (e.g. a ``git worktree`` of the commit
before, its ``src/``; ``DIR`` empty: this checkout's), alternating ``--repeat`` times,
and prints each label's median of the per-run percentiles: on a shared box only figures
taken side by side compare.  The load average is printed with each run.

Run: ``.venv/bin/python bench/bench_flush_latency.py --repeat 3 --src before=/tmp/rb-before/src
--src after=``.  Exit status 0 (a measurement).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

RECORDS = 25
VALUE = b"x" * 100


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "p50": statistics.median(s) * 1e3,
        "p90": s[int(len(s) * 0.9)] * 1e3,
        "p99": s[min(int(len(s) * 0.99), len(s) - 1)] * 1e3,
    }


def timed(n: int, body: Callable[[], None]) -> list[float]:
    body()  # warm-up
    out = []
    for _ in range(n):
        t = time.perf_counter()
        body()
        out.append(time.perf_counter() - t)
    return out


def measure(n: int, directory: Path, records: int = RECORDS) -> dict[str, dict[str, float]]:
    """All cases, in this process (the ``riverbed`` on ``sys.path``)."""
    import uvloop

    from riverbed.protocol.record_build import build_batch
    from riverbed.storage.config import LogConfig
    from riverbed.storage.manager import LogManager

    items = [(None, VALUE)] * records
    payload = bytes(len(build_batch(items)))
    results: dict[str, dict[str, float]] = {}

    fds = [os.open(directory / f"raw{i}", os.O_CREAT | os.O_WRONLY, 0o644) for i in range(4)]
    try:
        for name, sync in (("raw fdatasync", os.fdatasync), ("raw fsync", os.fsync)):

            def raw(sync: Callable[[int], None] = sync) -> None:
                os.write(fds[0], payload)
                sync(fds[0])

            results[name] = percentiles(timed(n, raw))
        results["raw 4 threads"] = percentiles(_raw_parallel(n, fds, payload))
    finally:
        for fd in fds:
            os.close(fd)
    zfds = [os.open(directory / f"zero{i}", os.O_CREAT | os.O_RDWR, 0o644) for i in range(4)]
    try:
        span = (n + 2) * len(payload)
        for fd in zfds:  # pre-zeroed: written and durable before the measurement
            os.pwrite(fd, bytes(span), 0)
            os.fsync(fd)
        at = [0]

        def overwrite() -> None:
            os.pwrite(zfds[0], payload, at[0])
            at[0] += len(payload)
            os.fdatasync(zfds[0])

        results["raw pre-zeroed"] = percentiles(timed(n, overwrite))
        results["raw 4 pre-zeroed"] = percentiles(_raw_parallel(n, zfds, payload, overwrite=True))
    finally:
        for fd in zfds:
            os.close(fd)

    manager = LogManager(directory / "data")
    try:
        logs = [manager.get_or_create("t", p, LogConfig()) for p in range(4)]
        # flush.messages at its maximum: the OS policy, appends request no flush
        quiet = manager.get_or_create("direct", 0, LogConfig(flush_messages=2**63 - 1))

        def direct() -> None:
            quiet.append(build_batch(items))
            quiet.flush()

        def one() -> None:
            r = logs[0].append(build_batch(items))
            logs[0].flush_future(r.last_offset).result()

        def four() -> None:
            futs = []
            for lg in logs:
                r = lg.append(build_batch(items))
                futs.append(lg.flush_future(r.last_offset))
            for f in futs:
                f.result()

        def busy(count: int) -> Callable[[], None]:
            def body() -> None:
                futs = []
                for lg in logs[:count]:
                    r = lg.append(build_batch(items))
                    futs.append(lg.flush_future(r.last_offset))
                spins = 0
                while not all(f.done() for f in futs):  # Python only: never gives up the GIL
                    spins += 1

            return body

        results["log.flush direct"] = percentiles(timed(n, direct))
        results["1 log"] = percentiles(timed(n, one))
        results["4 logs"] = percentiles(timed(n, four))
        results["1 log busy"] = percentiles(timed(n, busy(1)))
        results["4 logs busy"] = percentiles(timed(n, busy(4)))

        async def from_loop(count: int) -> list[float]:
            out = []
            for i in range(n + 1):
                t = time.perf_counter()
                futs = []
                for lg in logs[:count]:
                    r = lg.append(build_batch(items))
                    futs.append(asyncio.wrap_future(lg.flush_future(r.last_offset)))
                await asyncio.gather(*futs)
                if i:  # the first is a warm-up
                    out.append(time.perf_counter() - t)
            return out

        results["1 log uvloop"] = percentiles(uvloop.run(from_loop(1)))
        results["4 logs uvloop"] = percentiles(uvloop.run(from_loop(4)))
    finally:
        manager.close()
    return results


def _raw_parallel(
    n: int, fds: list[int], payload: bytes, *, overwrite: bool = False
) -> list[float]:
    """``overwrite``: ``pwrite`` from byte 0 on (over pre-zeroed space), not appends."""
    start = threading.Barrier(len(fds) + 1)
    done = threading.Barrier(len(fds) + 1)
    stop = False

    def worker(fd: int) -> None:
        at = 0
        while True:
            start.wait()
            if stop:
                return
            if overwrite:
                os.pwrite(fd, payload, at)
                at += len(payload)
            else:
                os.write(fd, payload)
            os.fdatasync(fd)
            done.wait()

    threads = [threading.Thread(target=worker, args=(fd,), daemon=True) for fd in fds]
    for t in threads:
        t.start()

    def round_() -> None:
        start.wait()
        done.wait()

    try:
        return timed(n, round_)
    finally:
        stop = True
        start.wait()
        for t in threads:
            t.join()


def child(n: int, records: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-flush-", dir=os.environ.get("BENCH_DIR")) as d:
        results = measure(n, Path(d), records)
    print(json.dumps({"load": os.getloadavg()[0], "results": results}))


def show(label: str, load: float, results: dict[str, dict[str, float]]) -> None:
    print(f"{label} (load {load:.1f})")
    for case, p in results.items():
        print(f"  {case:18} p50 {p['p50']:6.3f}  p90 {p['p90']:6.3f}  p99 {p['p99']:6.3f} ms")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=500, help="waits per case and run")
    parser.add_argument("--repeat", type=int, default=1, help="runs per --src label")
    parser.add_argument("--dir", default=None, help="where the files go (default: the tmp dir)")
    parser.add_argument("--records", type=int, default=RECORDS, help="100 B records per append")
    parser.add_argument("--src", action="append", default=[], metavar="LABEL=DIR")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.dir:
        os.environ["BENCH_DIR"] = args.dir
    if args.child:
        child(args.n, args.records)
        return
    if not args.src:
        with tempfile.TemporaryDirectory(prefix="bench-flush-", dir=args.dir) as d:
            show("this checkout", os.getloadavg()[0], measure(args.n, Path(d), args.records))
        return
    labels = [s.split("=", 1) for s in args.src]
    if any(len(lb) != 2 for lb in labels):
        parser.error("--src takes LABEL=DIR")
    runs: dict[str, list[dict[str, dict[str, float]]]] = {lb: [] for lb, _ in labels}
    for round_no in range(args.repeat):
        order = labels if round_no % 2 == 0 else labels[::-1]
        for label, src in order:
            env = dict(os.environ)
            if src:
                env["PYTHONPATH"] = src
            out = subprocess.run(
                [
                    *(sys.executable, __file__, "--child", "--n", str(args.n)),
                    *("--records", str(args.records)),
                ],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            data = json.loads(out.strip().splitlines()[-1])
            show(f"{label} run {round_no + 1}", data["load"], data["results"])
            runs[label].append(data["results"])
    print(f"median of {args.repeat} runs per label (ms):")
    cases = list(runs[labels[0][0]][0])
    print(f"  {'case':18} " + "  ".join(f"{lb:>20}" for lb, _ in labels))
    for case in cases:
        cells = []
        for label, _ in labels:
            ps = [r[case] for r in runs[label]]
            p50 = statistics.median(p["p50"] for p in ps)
            p99 = statistics.median(p["p99"] for p in ps)
            cells.append(f"{p50:7.3f} (p99 {p99:6.3f})")
        print(f"  {case:18} " + "  ".join(f"{c:>20}" for c in cells))


if __name__ == "__main__":
    main()
