"""GroupCommitFlusher: a slow checkpoint (two fsyncs per log) never holds up the flushes
of other logs; checkpoints run on their own thread (produce latency, docs/benchmarks.md)."""

from __future__ import annotations

import threading

from riverbed.storage.flusher import GroupCommitFlusher

WAIT_S = 30.0


class Target:
    """A Flushable whose checkpoint blocks until ``release`` is set."""

    def __init__(self) -> None:
        self.flushed = threading.Event()
        self.checkpointing = threading.Event()
        self.release = threading.Event()
        self.checkpoint_threads: set[str] = set()
        self.checkpoint_thread_ident: int | None = None

    def flush(self) -> int:
        self.flushed.set()
        return 0

    def flush_due(self, monotonic_ms: int) -> int | None:
        return None

    def checkpoint(self) -> None:
        self.checkpoint_threads.add(threading.current_thread().name)
        self.checkpoint_thread_ident = threading.get_ident()
        self.checkpointing.set()
        self.release.wait(WAIT_S)


def test_a_flush_is_served_while_a_checkpoint_is_stuck() -> None:
    slow, other = Target(), Target()
    flusher = GroupCommitFlusher(checkpoint_interval_ms=10)
    flusher.register(slow)
    flusher.start()
    try:
        assert slow.checkpointing.wait(WAIT_S)
        flusher.request(other)  # the checkpoint of ``slow`` is still running
        assert other.flushed.wait(WAIT_S)
        assert slow.checkpoint_threads == {"riverbed-checkpointer"}
    finally:
        slow.release.set()
        flusher.stop()


def test_stop_waits_for_the_checkpointer() -> None:
    target = Target()
    target.release.set()
    flusher = GroupCommitFlusher(checkpoint_interval_ms=10)
    flusher.register(target)
    flusher.start()
    assert target.checkpointing.wait(WAIT_S)
    checkpointer = next(
        t for t in threading.enumerate() if t.ident == target.checkpoint_thread_ident
    )
    flusher.stop()
    # this flusher's own thread: other tests' never-closed log managers may still run theirs
    assert not checkpointer.is_alive()
    assert not flusher.running
