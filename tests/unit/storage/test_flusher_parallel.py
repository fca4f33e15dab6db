"""GroupCommitFlusher: the logs of one round are flushed in parallel (their fsyncs share
the file system's journal commit), each log by one thread, and one failing flush does not
hold back the others."""

from __future__ import annotations

import threading

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
