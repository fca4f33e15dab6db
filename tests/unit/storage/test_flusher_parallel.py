"""GroupCommitFlusher: logs are flushed in parallel (their fsyncs share the file system's
journal commit) without one waiting for another's flush to end, each log by one thread at
a time, and one failing flush does not hold back the others."""

from __future__ import annotations

import threading
import time

from riverbed.storage.flusher import PARALLEL_FLUSHES, GroupCommitFlusher

WAIT_S = 30.0


class Target:
    """A Flushable whose flush waits at ``barrier`` (if any), then records itself."""

    def __init__(self, barrier: threading.Barrier | None = None, fail: bool = False) -> None:
        self.barrier = barrier
        self.fail = fail
        self.flushed = threading.Event()
        self.threads: set[str] = set()

    def flush(self) -> int:
        self.threads.add(threading.current_thread().name)
        if self.barrier is not None:
            self.barrier.wait()
        self.flushed.set()
        if self.fail:
            raise OSError("injected")
        return 0

    def flush_due(self, monotonic_ms: int) -> int | None:
        return None

    def checkpoint(self) -> None:
        pass


def test_one_rounds_logs_are_flushed_at_the_same_time() -> None:
    count = min(4, PARALLEL_FLUSHES)
    barrier = threading.Barrier(count, timeout=WAIT_S)  # passes only if all run together
    targets = [Target(barrier) for _ in range(count)]
    flusher = GroupCommitFlusher()
    for target in targets:  # requested before the thread starts: one round takes them all
        flusher.request(target)
    flusher.start()
    try:
        for target in targets:
            assert target.flushed.wait(WAIT_S)
        assert not barrier.broken
        assert len(set().union(*(t.threads for t in targets))) == count
    finally:
        flusher.stop()


def test_a_failing_flush_does_not_hold_back_the_rest_of_its_round() -> None:
    targets = [Target(fail=True), Target(), Target(fail=True)]
    flusher = GroupCommitFlusher()
    for target in targets:
        flusher.request(target)
    flusher.start()
    try:
        for target in targets:
            assert target.flushed.wait(WAIT_S)
        later = Target()  # the flusher thread is still serving
        flusher.request(later)
        assert later.flushed.wait(WAIT_S)
    finally:
        flusher.stop()


class Gated(Target):
    """A Flushable whose flushes wait for ``gate``; counts flushes and overlaps."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.lock = threading.Lock()
        self.running = 0
        self.overlapped = False
        self.count = 0

    def flush(self) -> int:
        with self.lock:
            self.running += 1
            self.overlapped = self.overlapped or self.running > 1
        self.started.release()
        try:
            assert self.gate.wait(WAIT_S)
            self.count += 1
            self.flushed.set()
            return 0
        finally:
            with self.lock:
                self.running -= 1


def test_a_log_requested_during_anothers_flush_does_not_wait_for_it() -> None:
    slow, quick = Gated(), Target()
    flusher = GroupCommitFlusher()
    flusher.start()
    try:
        flusher.request(slow)
        assert slow.started.acquire(timeout=WAIT_S)  # slow's fsync is under way
        flusher.request(quick)
        assert quick.flushed.wait(WAIT_S)  # while slow's is still blocked
        assert slow.count == 0
        slow.gate.set()
        assert slow.flushed.wait(WAIT_S)
    finally:
        slow.gate.set()
        flusher.stop()


def test_a_log_requested_during_its_own_flush_is_flushed_again_after_it() -> None:
    target = Gated()
    flusher = GroupCommitFlusher()
    flusher.start()
    try:
        flusher.request(target)
        assert target.started.acquire(timeout=WAIT_S)
        flusher.request(target)  # an append the running fsync may not cover
        target.gate.set()
        assert target.started.acquire(timeout=WAIT_S)  # a second flush starts...
        deadline = time.monotonic() + WAIT_S  # ...and ends
        while target.count < 2:
            assert time.monotonic() < deadline, "the second flush did not end"
            time.sleep(0.01)
        assert not target.overlapped
    finally:
        target.gate.set()
        flusher.stop()


class IntervalStuck(Gated):
    """A registered log whose interval flush is always due: the flusher thread itself
    runs that flush, and it blocks until ``gate``."""

    def flush_due(self, monotonic_ms: int) -> int | None:
        return 0


def test_a_request_is_flushed_while_the_flusher_thread_is_busy() -> None:
    stuck, quick = IntervalStuck(), Target()
    flusher = GroupCommitFlusher()
    flusher.register(stuck)
    flusher.start()
    try:
        assert stuck.started.acquire(timeout=WAIT_S)  # the flusher thread is held
        flusher.request(quick)  # handed straight to a helper, not via that thread
        assert quick.flushed.wait(WAIT_S)
        assert stuck.count == 0
        assert quick.threads != {"riverbed-flusher"}
    finally:
        stuck.gate.set()
        flusher.stop()


class Rounds:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rounds: list[tuple[int, int]] = []

    def fsync_done(self, seconds: float) -> None:
        pass

    def round_done(self, logs: int, requests: int) -> None:
        with self.lock:
            self.rounds.append((logs, requests))


def test_every_request_is_counted_once_by_the_rounds_that_serve_it() -> None:
    target = Gated()
    observer = Rounds()
    flusher = GroupCommitFlusher()
    flusher.observer = observer
    flusher.start()
    try:
        flusher.request(target)
        assert target.started.acquire(timeout=WAIT_S)
        for _ in range(3):  # during the flush: one more flush serves all three
            flusher.request(target)
        target.gate.set()
        deadline = time.monotonic() + WAIT_S
        while target.count < 2 or len(observer.rounds) < 2:
            assert time.monotonic() < deadline, "the second flush did not end"
            time.sleep(0.01)
        with observer.lock:
            assert observer.rounds == [(1, 1), (1, 3)]
    finally:
        target.gate.set()
        flusher.stop()
