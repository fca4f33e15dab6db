"""SIGKILL a share-partition worker mid-stream: no answered ACCEPT is ever delivered again.

A child process plays the broker's part for one share partition over a real durable log
(``__share_group_state`` partition 0, Riverbed's storage engine, fsync): it acquires
offsets of a 2,000-record topic for three members, acknowledges them (mostly ACCEPT, some
RELEASE, REJECT, and locks left to time out), appends every record the share partition
returns in order, and prints ``A first last`` for accepted offsets only after their
records are fsynced (the broker's answer).  The parent kills it with SIGKILL several
times, and after each kill reopens the log (recovery), replays and restores: every
printed offset is ACKNOWLEDGED or below the start offset, and nothing is locked.  The
last child runs to the end: the start offset reaches 2,000, so no offset was lost.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

from riverbed.share import RecordState, SharePartition, SharePartitionConfig, SharePartitionKey
from riverbed.share.share_state_log import replay_partition_log
from riverbed.storage import LogManager

TOPIC = "__share_group_state"
RECORDS = 2000
KEY = SharePartitionKey("workers", uuid.UUID(int=42), 0)
CONFIG = dict(record_lock_duration_ms=50, delivery_count_limit=4, snapshot_update_records=20)

WORKER = textwrap.dedent(f"""
    import random, sys, uuid
    from pathlib import Path
    from riverbed.protocol.records import build_batch
    from riverbed.share import SharePartition, SharePartitionConfig, SharePartitionKey
    from riverbed.share.share_state_log import replay_partition_log
    from riverbed.storage import LogConfig, LogManager

    mgr = LogManager(Path(sys.argv[1]))
    log = mgr.get_or_create({TOPIC!r}, 0, LogConfig(segment_bytes=32 * 1024))
    cfg = SharePartitionConfig(**{CONFIG!r})
    rng = random.Random(int(sys.argv[2]))
    now = 0

    def append(records, wait):
        if records:
            items = [(r.key_bytes(), r.value_bytes()) for r in records]
            last = log.append(build_batch(items, base_timestamp=0)).last_offset
            if wait:
                log.flush_future(last).result()

    key = SharePartitionKey("workers", uuid.UUID(int=42), 0)
    persisted = replay_partition_log(log).state(key)
    if persisted is None:
        sp = SharePartition("workers", uuid.UUID(int=42), 0, cfg, start_offset=0)
        append([sp.snapshot(now)], True)
    else:
        sp, change = SharePartition.restore(persisted, cfg, now)
        append(change.records, True)
    print("READY", flush=True)
    while sp.start_offset < {RECORDS}:
        now += 1
        member = rng.choice("abc")
        got = sp.acquire(member, [(sp.next_fetch_offset(), {RECORDS} - 1)], rng.randint(1, 25), now)
        append(got.records, False)
        batches, accepted = [], []
        for a in got.acquired:
            roll = rng.random()
            if roll < 0.1:
                continue  # never acknowledged: the lock times out
            n = a.last_offset - a.first_offset + 1
            types = [1 if rng.random() < 0.85 else rng.choice([2, 3]) for _ in range(n)]
            batches.append((a.first_offset, a.last_offset, types))
            accepted += [a.first_offset + i for i, t in enumerate(types) if t == 1]
        result = sp.acknowledge(member, batches, now)
        assert result.error_code == 0, result
        append(result.records, True)
        for off in accepted:
            sys.stdout.write(f"A {{off}}\\n")
        sys.stdout.flush()
        if rng.random() < 0.2:
            now += 100
            append(sp.expire_locks(now).records, True)
    print("DONE", sp.start_offset, flush=True)
    mgr.close()
""")


def restore(data_dir: Path) -> SharePartition:
    mgr = LogManager(data_dir, start_background=False)
    try:
        log = mgr.get(TOPIC, 0)
        assert log is not None
        persisted = replay_partition_log(log).state(KEY)
    finally:
        mgr.close()
    assert persisted is not None
    sp, _ = SharePartition.restore(persisted, SharePartitionConfig(**CONFIG), 0)  # type: ignore[arg-type]
    return sp


def run_worker(data_dir: Path, seed: int, kill_after: int | None) -> tuple[set[int], bool]:
    """Run one worker; SIGKILL it after ``kill_after`` accepted offsets (None: to the end)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(data_dir), str(seed)],
        stdout=subprocess.PIPE,
        text=True,
    )
    accepted: set[int] = set()
    done = False
    deadline = time.monotonic() + 240
    assert proc.stdout is not None
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("A "):
                accepted.add(int(line.split()[1]))
                if kill_after is not None and len(accepted) >= kill_after:
                    break
            elif line.startswith("DONE"):
                done = True
                break
    finally:
        if kill_after is not None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=120)
    return accepted, done


def test_sigkill_never_redelivers_an_answered_accept(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    answered: set[int] = set()
    for crash, kill_after in enumerate((150, 300, 200)):
        accepted, done = run_worker(data_dir, seed=crash, kill_after=kill_after)
        assert not done and len(accepted) >= kill_after, "worker too slow before its kill"
        answered |= accepted
        sp = restore(data_dir)
        assert sp.acquired_records == 0
        for off in answered:
            if off >= sp.start_offset:
                state = sp.state_of(off)
                assert state is not None and state[0] is RecordState.ACKNOWLEDGED, off
    accepted, done = run_worker(data_dir, seed=99, kill_after=None)
    assert done
    sp = restore(data_dir)
    assert sp.start_offset == RECORDS and sp.in_flight_records == 0
    assert len(answered | accepted) > RECORDS // 2
