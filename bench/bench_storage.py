"""Durable append throughput of riverbed.storage, next to the disk's raw rates.

Prints, for 100 B and 1 KiB records in batches of ``--batch`` records:

* raw sequential write (one fsync at the end) and raw fsync/s of 4 KiB writes,
* durable appends with group commit (``--appenders`` threads, shared flusher thread),
* durable appends with an fsync per append (one appender, inline flush: no sharing),
* one compaction pass over ~``--compact-mb`` MB of keyed 1 KiB records where half the
  keys are overwritten (streaming cleaner, default dedupe buffer): MB/s read and the
  segment count before/after.

Run: ``.venv/bin/python bench/bench_storage.py [--seconds 3] [--appenders 32]
[--compact-mb 64]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from riverbed.protocol.records import build_batch
from riverbed.storage import LogConfig, LogManager, PartitionLog
from riverbed.storage.cleaner import LogCleaner
from riverbed.storage.config import LONG_MAX


def raw_rates(directory: Path, seconds: float) -> tuple[float, float]:
    path = directory / "raw"
    chunk = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    t0 = time.perf_counter()
    for _ in range(512):
        os.write(fd, chunk)
    os.fsync(fd)
    seq_mb_s = 512 / (time.perf_counter() - t0)
    os.close(fd)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    n = 0
    block = os.urandom(4096)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        os.write(fd, block)
        os.fsync(fd)
        n += 1
    fsyncs = n / (time.perf_counter() - t0)
    os.close(fd)
    path.unlink()
    return seq_mb_s, fsyncs


def run(log: PartitionLog, payload: bytes, appenders: int, seconds: float) -> tuple[float, float]:
    stop = time.perf_counter() + seconds
    counts = [0] * appenders

    def work(i: int) -> None:
        while time.perf_counter() < stop:
            r = log.append(payload)
            log.flush_future(r.last_offset).result()
            counts[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(appenders)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    appends = sum(counts)
    return appends / elapsed, appends * len(payload) / elapsed / 1e6


def compaction(directory: Path, megabytes: int) -> str:
    config = LogConfig(
        cleanup_policy="compact", segment_bytes=8 << 20, flush_messages=LONG_MAX, flush_ms=LONG_MAX
    )
    log = PartitionLog.open(directory / "c-0", config)
    value = os.urandom(1000)
    batches = megabytes * 10  # 100 records of ~1 KiB per batch
    half = batches // 2
    for i in range(batches):
        key_batch = i - half if i >= half else i  # the second half overwrites the first
        log.append(build_batch([(b"%d-%d" % (key_batch, j), value, None) for j in range(100)]))
    log.roll()
    log.append(build_batch([(b"tail", value, None)]))
    segments = len(log.segments())
    cleaner = LogCleaner(log._clock)
    t0 = time.perf_counter()
    result = cleaner.clean(log)
    elapsed = time.perf_counter() - t0
    after_first = len(log.segments())
    cleaner.clean(log)  # groups the segments the first pass shrank (Kafka does the same)
    after_second = len(log.segments())
    log.close()
    assert result is not None
    return (
        f"compaction: {result.bytes_before / 1e6:,.0f} MB in {elapsed:,.2f} s = "
        f"{result.bytes_before / 1e6 / elapsed:,.0f} MB/s; {result.records_removed:,} "
        f"records removed; segments {segments} -> {after_first} -> {after_second} "
        "(second pass)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--appenders", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--compact-mb", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base = Path(tmp)
        seq, fsyncs = raw_rates(base, args.seconds)
        print(f"disk: sequential write {seq:,.0f} MB/s; 4 KiB write+fsync {fsyncs:,.0f}/s")
        for size in (100, 1024):
            payload = build_batch([(None, os.urandom(size), 1)] * args.batch)
            recs = args.batch
            mgr = LogManager(base / f"g{size}")
            log = mgr.get_or_create("t", 0, LogConfig())
            aps, mbs = run(log, payload, args.appenders, args.seconds)
            rounds = mgr._flusher.fsync_rounds
            mgr.close()
            print(
                f"{size:>5} B x{recs}: group commit ({args.appenders} appenders): "
                f"{aps:,.0f} appends/s, {aps * recs:,.0f} records/s, {mbs:,.1f} MB/s, "
                f"{rounds / args.seconds:,.0f} fsyncs/s"
            )
            single = PartitionLog.open(base / f"s{size}" / "t-0", LogConfig())
            aps, mbs = run(single, payload, 1, args.seconds)
            single.close()
            print(
                f"{size:>5} B x{recs}: fsync per append (1 appender):  "
                f"{aps:,.0f} appends/s, {aps * recs:,.0f} records/s, {mbs:,.1f} MB/s"
            )
        if args.compact_mb > 0:
            print(compaction(base, args.compact_mb))


if __name__ == "__main__":
    main()
