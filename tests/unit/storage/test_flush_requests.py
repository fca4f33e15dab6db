"""PartitionLog flush requests: a waiter whose offset the flush an append already
requested will cover asks the flusher for nothing more (it used to request a second,
empty flush pass per acks=all append); every other waiter still requests one.  And the
broker's shorter switch interval (fsync helpers get the GIL back from a busy loop)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _batches import batch

from riverbed.clock import ManualClock
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.flusher import (
    SWITCH_INTERVAL_S,
    Flushable,
    GroupCommitFlusher,
    tune_switch_interval,
)

WAIT_S = 30.0


class CountingFlusher(GroupCommitFlusher):
    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    def request(self, target: Flushable) -> None:
        self.requests += 1
        super().request(target)


def test_an_append_and_its_waiter_make_one_request(tmp_path: Path) -> None:
    flusher = CountingFlusher()
    flusher.start()
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), clock=ManualClock(), flusher=flusher)
    try:
        for i in range(20):
            before = flusher.requests
            result = log.append(batch(b"v%d" % i))  # per-append policy: requests a flush
            fut = log.flush_future(result.last_offset)
            assert flusher.requests == before + 1
            assert fut.result(timeout=WAIT_S) is None
            assert log.flushed_offset > result.last_offset
    finally:
        log.close()
        flusher.stop()


def test_a_forced_waiter_without_a_pending_flush_requests_one(tmp_path: Path) -> None:
    flusher = CountingFlusher()
    flusher.start()
    config = LogConfig(flush_messages=1_000_000, flush_ms=3_600_000)  # interval policy
    log = PartitionLog.open(tmp_path / "t-0", config, clock=ManualClock(), flusher=flusher)
    try:
        result = log.append(batch(b"v"))  # under the threshold: no request
        assert flusher.requests == 0
        fut = log.flush_future(result.last_offset, force=True)
        assert flusher.requests == 1
        assert fut.result(timeout=WAIT_S) is None
        # a waiter past the log end is not covered by any pending flush: it asks too
        beyond = log.flush_future(log.log_end_offset + 5, force=True)
        assert flusher.requests == 2
        assert not beyond.done()
    finally:
        log.close()
        flusher.stop()


def test_the_broker_switch_interval_is_set_process_wide() -> None:
    previous = sys.getswitchinterval()
    try:
        tune_switch_interval()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
    finally:
        sys.setswitchinterval(previous)
