"""Simulated power loss: drop every write that was not fsynced, then recover.

:func:`riverbed.storage.faults.record_power_loss` records, per segment file, how much
its last fsync covered; after an unclean close ``cut`` truncates each file back to that
(or tears it somewhere in the unsynced part) and empties the never-fsynced indexes.
The log is then reopened: every acknowledged (flushed) record must be there, and what is
served must be exactly a prefix of what was appended - nothing past the torn point, no
garbage, no gap.
"""

from __future__ import annotations

import errno
import logging
import random
from concurrent.futures import Future
from pathlib import Path

import pytest

from riverbed.clock import ManualClock
from riverbed.protocol.records import build_batch
from riverbed.storage import LogConfig, PartitionLog, faults
from riverbed.storage.flusher import GroupCommitFlusher
from riverbed.testing.log_contents import served_values as served


def one(value: bytes) -> bytes:
    return build_batch([(None, value, 1_700_000_000_000)])


def acknowledged(waits: list[tuple[int, Future[None]]]) -> int:
    """One past the last offset whose flush future succeeded."""
    done = [o for o, f in waits if f.done() and not f.cancelled() and f.exception() is None]
    return max(done, default=-1) + 1


def check_recovered(
    directory: Path, config: LogConfig, appended: list[bytes], acked: int
) -> PartitionLog:
    log = PartitionLog.open(directory, config, clock=ManualClock())
    assert log.offline_error is None, log.offline_error
    values = served(log)
    assert len(values) >= acked, f"acknowledged records lost: {len(values)} < {acked}"
    assert values == appended[: len(values)], "served something that is not the prefix"
    assert log.log_end_offset == len(values)
    # the recovered log takes appends where it ends
    assert log.append(one(b"after")).base_offset == len(values)
    assert served(log)[-1] == b"after"
    return log


@pytest.mark.parametrize("seed", range(6))
def test_every_acknowledged_record_survives_a_power_loss(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=rng.choice([300, 1000, 5000]), index_interval_bytes=64)
    appended: list[bytes] = []
    waits: list[tuple[int, Future[None]]] = []
    flusher = GroupCommitFlusher()
    flusher.start()
    with faults.record_power_loss() as power:
        log = PartitionLog.open(directory, config, clock=ManualClock(), flusher=flusher)

        def append(value: bytes) -> None:
            result = log.append(one(value))
            appended.append(value)
            waits.append((result.last_offset, log.flush_future(result.last_offset)))

        for i in range(rng.randint(40, 120)):
            append(b"%d-%d-" % (seed, i) + b"x" * rng.randint(0, 80))
            if rng.random() < 0.3:
                waits[-1][1].result(timeout=10)
        # A last burst whose fsyncs fail: certainly unsynced when the power goes.
        with faults.inject("segment.fsync", error=errno.EIO):
            for i in range(rng.randint(1, 15)):
                append(b"%d-burst-%d-" % (seed, i) + b"y" * rng.randint(0, 80))
            acked = acknowledged(waits)
            log.close_unclean()
        flusher.stop()
        assert power.unsynced(), "the scenario must leave unsynced bytes to lose"
        power.cut(tear=lambda _path, synced, current: rng.randint(synced, current))
    assert acked > 0
    check_recovered(directory, config, appended, acked).close()


def test_a_rolled_segment_torn_before_its_fsync_is_cut_and_later_ones_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A roll leaves the old segment's fsync to the flusher.  Power lost before it:
    the old segment is torn while the next one's writes reached the disk.  Recovery
    must cut the tear and drop what follows (none of it was acknowledged)."""
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=600, index_interval_bytes=64)
    appended: list[bytes] = []
    waits: list[tuple[int, Future[None]]] = []
    flusher = GroupCommitFlusher()
    flusher.start()
    with faults.record_power_loss() as power:
        log = PartitionLog.open(directory, config, clock=ManualClock(), flusher=flusher)

        def append(value: bytes) -> None:
            result = log.append(one(value))
            appended.append(value)
            waits.append((result.last_offset, log.flush_future(result.last_offset)))

        for i in range(3):
            append(b"acked-%d" % i)
            waits[-1][1].result(timeout=10)
        first = log.segments()[0].log_path.name
        with faults.inject("segment.fsync", error=errno.EIO, match=first):
            while len(log.segments()) < 3:  # two rolls; segment 0's fsync keeps failing
                append(b"later-%d-" % len(appended) + b"z" * 60)
            acked = acknowledged(waits)
            assert acked == 3
            log.checkpoint()
            log.close_unclean()
        flusher.stop()
        torn = str(directory / first)

        def tear(path: str, synced: int, current: int) -> int:
            # the first segment loses part of its unsynced tail (mid-batch); the later
            # segments' writes all reached the disk
            return synced + (current - synced) // 2 + 1 if path == torn else current

        power.cut(tear=tear)
    with caplog.at_level(logging.WARNING, logger="riverbed.storage.recovery"):
        log = check_recovered(directory, config, appended, acked)
    assert "truncating torn tail" in caplog.text and "follows the torn tail" in caplog.text
    assert len(log.segments()) == 1  # the later segments were dropped
    log.close()
