"""The fd cache bounds open descriptors, never hands out a closed or reused one, and lets
a data dir with far more segments than RLIMIT_NOFILE open, serve and reopen."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from riverbed.storage.fd_cache import FdCache


def make_files(tmp_path: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        p = tmp_path / f"f{i}"
        p.write_bytes(f"file-{i:04d}".encode())
        paths.append(p)
    return paths


def test_lru_bounds_open_descriptors_and_reopens_on_demand(tmp_path: Path) -> None:
    cache = FdCache(3)
    files = [cache.file(p) for p in make_files(tmp_path, 8)]
    for _round in range(2):
        for i, f in enumerate(files):
            assert f.pread(9, 0) == f"file-{i:04d}".encode()
            assert cache.open_count <= 3
    assert cache.opens == 16  # every use after eviction reopened the file
    files[7].pread(1, 0)
    assert cache.opens == 16  # the most recent one stayed open
    assert sum(f.is_open for f in files) == 3
    files[0].pwrite(b"X", 0)
    files[0].fsync()
    assert (tmp_path / "f0").read_bytes().startswith(b"X")


def test_pinned_descriptor_is_never_closed_under_its_user(tmp_path: Path) -> None:
    cache = FdCache(1)
    a, b = (cache.file(p) for p in make_files(tmp_path, 2))
    with a.use() as fd:
        assert b.pread(9, 0) == b"file-0001"  # opens past capacity: a is pinned
        assert os.pread(fd, 9, 0) == b"file-0000"
        a.close()  # closing while in use defers the close to the release
        assert os.pread(fd, 9, 0) == b"file-0000"
    with pytest.raises(OSError) as info:
        a.pread(1, 0)
    assert info.value.errno == errno.EBADF
    b.close()
    assert cache.open_count == 0


def test_renamed_file_is_reopened_by_its_new_name(tmp_path: Path) -> None:
    cache = FdCache(1)
    a, b = (cache.file(p) for p in make_files(tmp_path, 2))
    a.pread(1, 0)
    with a.use():
        os.replace(a.path, tmp_path / "moved")
        a.renamed(tmp_path / "moved")
    b.pread(1, 0)  # evicts a
    assert not a.is_open and a.pread(9, 0) == b"file-0000"


def test_missing_file_is_not_recreated(tmp_path: Path) -> None:
    f = FdCache(2).file(tmp_path / "absent")
    with pytest.raises(FileNotFoundError):
        f.pread(1, 0)
    assert not (tmp_path / "absent").exists()


def test_threads_always_read_their_own_file(tmp_path: Path) -> None:
    cache = FdCache(4)
    files = [cache.file(p) for p in make_files(tmp_path, 24)]
    errors: list[str] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(2000):
            i = rng.randrange(len(files))
            got = files[i].pread(9, 0)
            if got != f"file-{i:04d}".encode():
                errors.append(f"{i}: {got!r}")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache.open_count <= 4


MANY_PARTITIONS = textwrap.dedent("""
    import resource, sys, time
    from pathlib import Path
    PARTITIONS, LIMIT = int(sys.argv[2]), int(sys.argv[3])
    HARD = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, HARD))

    from riverbed.protocol.batch import set_base_offset
    from riverbed.protocol.records import build_batch, iter_batches_with_records
    from riverbed.storage import LogConfig, LogManager
    from riverbed.storage.config import LONG_MAX

    data = Path(sys.argv[1])
    t0 = time.monotonic()
    for p in range(PARTITIONS):  # two segments of one batch each, written directly
        d = data / f"t-{p}"
        d.mkdir(parents=True)
        for base in (0, 1):
            batch = bytearray(build_batch([(None, f"{p}-{base}".encode(), 1000)]))
            set_base_offset(batch, base, 0)
            (d / f"{base:020d}.log").write_bytes(batch)
    config = LogConfig(flush_messages=LONG_MAX)  # no fsync per append

    def check(mgr: LogManager, end: int) -> None:
        for p in range(PARTITIONS):
            log = mgr.get("t", p)
            assert log is not None and log.log_end_offset == end, (p, log)
            values = []
            offset = 0
            while offset < end:
                for h, rs in iter_batches_with_records(log.read(offset, 1 << 20).records):
                    values.extend(r.value for r in rs)
                    offset = h.next_offset
            expected = [f"{p}-{o}".encode() for o in range(end)]
            assert values == expected, (p, values)

    t1 = time.monotonic()
    mgr = LogManager(data, start_background=False, default_config=config)
    check(mgr, 2)
    for p in range(PARTITIONS):
        mgr.get("t", p).append(build_batch([(None, f"{p}-2".encode(), 1000)]))
    check(mgr, 3)
    mgr.close()
    t2 = time.monotonic()
    mgr = LogManager(data, start_background=False, default_config=config)
    check(mgr, 3)
    mgr.close()
    import os
    print(f"create {t1 - t0:.1f}s, open+serve+close {t2 - t1:.1f}s, "
          f"reopen {time.monotonic() - t2:.1f}s, fds now {len(os.listdir('/proc/self/fd'))}")
""")


def test_data_dir_with_more_segments_than_rlimit_nofile(tmp_path: Path) -> None:
    """1,000 partitions x 2 segments under RLIMIT_NOFILE 256: without the cache the
    open fails with EMFILE."""
    result = subprocess.run(
        [sys.executable, "-c", MANY_PARTITIONS, str(tmp_path / "data"), "1000", "256"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout)


BROKER_MANY_PARTITIONS = textwrap.dedent("""
    import os, resource, sys
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))  # the broker cannot raise it
    from pathlib import Path
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    from riverbed.testing.embedded import EmbeddedBroker

    N = int(sys.argv[2])
    broker = EmbeddedBroker(Path(sys.argv[1])).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic("many", N, 1)], request_timeout=120)["many"].result(120)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for p in range(N):
        producer.produce("many", value=b"v%d" % p, partition=p)
    assert producer.flush(120) == 0
    del producer
    broker.stop()
    broker.start()  # used to exit with EMFILE
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g"})
    consumer.assign([TopicPartition("many", p, 0) for p in range(0, N, 97)])
    got = set()
    import time
    deadline = time.monotonic() + 60
    while len(got) < len(range(0, N, 97)) and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.add(msg.value())
    consumer.close()
    assert got == {b"v%d" % p for p in range(0, N, 97)}, got
    print("fds in use", len(os.listdir("/proc/self/fd")))
    broker.stop()
""")


def test_broker_restarts_with_more_partitions_than_rlimit_nofile(tmp_path: Path) -> None:
    """CreateTopics with 700 partitions, produce, restart and consume under a hard
    RLIMIT_NOFILE of 512 (each partition used to keep its segment open)."""
    result = subprocess.run(
        [sys.executable, "-c", BROKER_MANY_PARTITIONS, str(tmp_path / "data"), "700"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
