"""Group commit: background threads fsync logs on behalf of every waiting appender.

Appenders never fsync themselves.  A log that needs an fsync (an append under the
per-append policy, a ``flush_future(force=True)``, or an interval threshold) calls
:meth:`GroupCommitFlusher.request`; the flusher thread takes every requested log, fsyncs
it once up to its log end offset at that moment, and resolves all the futures that fsync
covers.  Appends arriving while an fsync runs are covered by the next one, so N
concurrent appenders share about one fsync per round instead of paying N.

Logs are fsynced in parallel, by up to :data:`PARALLEL_FLUSHES` helper threads, each
log by one thread at a time.  :meth:`GroupCommitFlusher.request` hands a log that no
helper is flushing straight to a helper (a "round" of one log), without waking the
flusher thread: one thread hand-off between the appender and the fsync, not two (the
flusher thread's wake-up cost ~0.05-0.1 ms per wait, see docs/benchmarks.md "fsync wait
latency").  A log requested while its flush runs is flushed again by the same helper as
soon as that flush ends (the running fsync may not cover the newest append), again
without a hand-off.  fsync releases the GIL, and concurrent fsyncs of files on one file
system share the journal commit (ext4: 4 concurrent fdatasyncs took ~0.39 ms here, 4 in
a row ~1.6 ms), so a transaction's markers on 4 partitions, or 4 produce requests
arriving 0.1 ms apart, wait for about one fsync rather than 4 in a row.

The flusher thread hands out the logs requested before :meth:`~GroupCommitFlusher.start`
(one round of them all) and any a helper could not take (interpreter shutdown: it then
flushes them itself), and runs the interval policy (``flush.ms``).  Each log's recovery-point
checkpoint is written at most every ``checkpoint_interval_ms`` by a thread of its own
(``riverbed-checkpointer``): a checkpoint costs two fsyncs per log, and written on the
flusher thread they held up every log's next hand-out once a second (4 busy partitions:
8 fsyncs in a row, tens of ms on a busy disk), a periodic stall in produce latency.

With an io_uring attached (:meth:`GroupCommitFlusher.attach_ring`, by the broker on its
event loop), a flush requested on the loop's thread of a log no one is flushing starts
there instead (``flush_on_ring``): its fdatasync goes to the ring and its completion,
read on the loop, answers the waiters, so no helper has to win the GIL back from a busy
loop (:mod:`riverbed.storage.uring`).  The log stays in flight until then, so requests
meanwhile are served by the next flush as with a helper; a flush the log cannot start
there (see ``PartitionLog.flush_on_ring``) goes to a helper as before.

Metrics: an optional :class:`FlushObserver` (``observer``, set once before appends
start) hears each log flush's duration and each round's size, on the flushing thread.

Thread-safety: ``request``/``register``/``unregister`` may be called from any thread.
Crash behaviour: nothing of its own on disk; a future that was not resolved before a
crash promised nothing.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from riverbed.storage.uring import FsyncRing

log = logging.getLogger(__name__)

PARALLEL_FLUSHES = 8
"""At most this many logs are flushed at once (helper threads, started with the flusher);
more wait for a free helper."""

SWITCH_INTERVAL_S = 0.0005
"""The interpreter's thread switch interval a broker process runs with (Python's default:
5 ms); see :func:`tune_switch_interval`."""


def tune_switch_interval() -> None:
    """Shorten the interpreter's switch interval to :data:`SWITCH_INTERVAL_S` (process-wide;
    called once by ``riverbed broker`` at start-up).

    A helper thread needs the GIL for a few Python lines between its wake-up and the
    fsync, and again after the fsync to resolve the waiters; while the event loop runs
    Python without a pause, each of those waits until the interpreter forces a switch,
    one switch interval.  One fsync wait with the waiter spinning in Python
    (``bench/bench_flush_latency.py``, "1 log busy") took p50 12.6 ms at 5 ms, 4.0 at
    1 ms, 1.4 at 0.5 ms and 0.95 at 0.2 ms.  A forced switch only happens while a thread
    waits for the GIL, and then costs two context switches."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


class Flushable(Protocol):
    def flush(self) -> int: ...

    def flush_due(self, monotonic_ms: int) -> int | None:
        """0 if an interval flush is due now, ms until the next one, or None (no policy)."""
        ...

    def checkpoint(self) -> None: ...


RingFinished = Callable[[Callable[[], None] | None], None]
"""What a flush on the ring calls once its waiters are answered: with None, or with the
follow-up work (run on a helper thread, the log still in flight) the flush left.  A log
that can flush on the ring has ``flush_on_ring(ring, finished) -> bool`` (see
``PartitionLog.flush_on_ring``); the flusher looks for it, so other Flushables need none."""


class FlushObserver(Protocol):
    """Told, on the thread that flushed, how long each log flush took and how big each
    round was (logs fsynced, flush requests served: the ``request`` calls for those logs
    since their previous hand-out); must be cheap and must not raise."""

    def fsync_done(self, seconds: float, *, on_ring: bool = False) -> None:
        """``on_ring``: the flush's fsync ran on the io_uring, not on a helper."""
        ...

    def round_done(self, logs: int, requests: int) -> None: ...


class GroupCommitFlusher:
    """The background fsync threads shared by the logs of one LogManager."""

    def __init__(self, *, checkpoint_interval_ms: int = 1000) -> None:
        self._cond = threading.Condition(threading.Lock())  # never taken twice
        self._requested: dict[int, Flushable] = {}
        self._asked: dict[int, int] = {}  # request() calls per log since its hand-out
        self._registered: dict[int, Flushable] = {}
        self._stopping = False
        self._checkpoint_interval_ms = checkpoint_interval_ms
        self._thread: threading.Thread | None = None
        self._checkpointer: threading.Thread | None = None
        self._checkpoint_stop = threading.Event()
        self.fsync_rounds = 0
        self._in_flight: set[int] = set()  # ids of the logs a helper is flushing
        self.observer: FlushObserver | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._ring: FsyncRing | None = None

    def attach_ring(self, ring: FsyncRing | None) -> None:
        """From now on, a flush requested on ``ring``'s loop thread of a log no helper is
        flushing starts there, its fsync submitted to the ring (see
        :mod:`riverbed.storage.uring`); None: helpers only.  :meth:`stop` drains and
        closes it."""
        self._ring = ring

    def start(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(
            PARALLEL_FLUSHES, thread_name_prefix="riverbed-flusher"
        )
        self._thread = threading.Thread(target=self._run, name="riverbed-flusher", daemon=True)
        self._thread.start()
        self._checkpoint_stop.clear()
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, name="riverbed-checkpointer", daemon=True
        )
        self._checkpointer.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._checkpoint_stop.set()
        ring, self._ring = self._ring, None
        if ring is not None:  # the flushes it still runs answer their waiters first
            ring.close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._checkpointer is not None:
            self._checkpointer.join()
            self._checkpointer = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def request(self, target: Flushable) -> None:
        """Flush ``target`` soon: at once on a helper if none is flushing it, else again
        after the flush under way (by the helper running it)."""
        key = id(target)
        with self._cond:
            self._asked[key] = self._asked.get(key, 0) + 1
            pool = self._pool
            if key in self._in_flight or pool is None or self._stopping:
                self._requested[key] = target
                if key not in self._in_flight:
                    self._cond.notify()
                return
            self._in_flight.add(key)
            asked = self._asked.pop(key)
        if self._start_on_ring(target, asked):
            return
        try:
            pool.submit(self._flush_owned, target, asked)
        except RuntimeError:  # interpreter shutdown: the flusher thread flushes it
            with self._cond:
                self._in_flight.discard(key)
                self._requested[key] = target
                self._asked[key] = self._asked.get(key, 0) + asked
                self._cond.notify()

    def _start_on_ring(self, target: Flushable, asked: int) -> bool:
        """Start the flush of ``target`` (in flight) on the ring, if called on its loop
        thread and the log can: True when started (the ring's completion then releases
        it, or hands it on), False when a helper must flush it."""
        ring = self._ring
        if ring is None or not ring.on_loop_thread():
            return False
        start = getattr(target, "flush_on_ring", None)
        if start is None:
            return False
        started = time.perf_counter()

        def finished(tail: Callable[[], None] | None) -> None:
            observer = self.observer
            if observer is not None:
                observer.fsync_done(time.perf_counter() - started, on_ring=True)
                if asked:
                    observer.round_done(1, asked)
            with self._cond:
                self.fsync_rounds += 1
            if tail is not None:
                self._submit(self._tail_owned, target, tail)
            else:
                self._release(target)

        try:
            return bool(start(ring, finished))
        except Exception:
            log.exception("flush failed")
            self._release(target)
            return True

    def _release(self, target: Flushable) -> None:
        """After a flush on the ring: release ``target``, or flush it again at once if it
        was requested meanwhile (on the ring when possible, else on a helper)."""
        asked = self._again_or_release(id(target))
        if asked is not None:
            self._resume(target, asked)

    def _resume(self, target: Flushable, asked: int) -> None:
        """On the ring's loop: flush ``target`` (in flight) again, on the ring when it
        can, else on a helper."""
        if not self._start_on_ring(target, asked):
            self._submit(self._flush_owned, target, asked)

    def _hand_back(self, target: Flushable, asked: int) -> bool:
        """On a helper, ``target`` (in flight) requested again: True when its next flush
        was handed to the ring's loop (see :meth:`_flush_owned`), False to flush it here."""
        ring = self._ring
        if ring is None or getattr(target, "flush_on_ring", None) is None:
            return False
        return ring.call_soon(self._resume, target, asked)

    def _again_or_release(self, key: int) -> int | None:
        """After a flush of the log ``key`` (in flight): the requests one more flush must
        serve when it was requested meanwhile (it stays in flight), else None (released;
        the flusher thread is woken if a request is waiting for it)."""
        with self._cond:
            if key in self._requested and not self._stopping:
                del self._requested[key]
                return self._asked.pop(key, 0)
            self._in_flight.discard(key)
            if key in self._requested:
                self._cond.notify()
            return None

    def _submit(self, fn: Callable[..., None], *args: object) -> None:
        """``fn(*args)`` on a helper, or here once no new helper can start."""
        pool = self._pool
        try:
            if pool is not None:
                pool.submit(fn, *args)
                return
        except RuntimeError:  # interpreter shutdown
            pass
        fn(*args)

    def _tail_owned(self, target: Flushable, tail: Callable[[], None]) -> None:
        """On a helper: the follow-up work a flush on the ring left, then as after a
        helper's own flush (again while requested, then released)."""
        try:
            tail()
        except Exception:
            log.exception("flush follow-up failed")
        asked = self._again_or_release(id(target))
        if asked is not None and not self._hand_back(target, asked):
            self._flush_owned(target, asked)

    def register(self, target: Flushable) -> None:
        with self._cond:
            self._registered[id(target)] = target
            self._cond.notify()

    def unregister(self, target: Flushable) -> None:
        with self._cond:
            self._registered.pop(id(target), None)
            self._requested.pop(id(target), None)
            self._asked.pop(id(target), None)

    def _run(self) -> None:
        wait_s = 0.1
        while True:
            with self._cond:
                if not self._stopping and not self._ready_locked():
                    self._cond.wait(wait_s)
                if self._stopping:
                    return
                batch = [t for k, t in self._requested.items() if k not in self._in_flight]
                for target in batch:
                    del self._requested[id(target)]
                    self._in_flight.add(id(target))
                requests = sum(self._asked.pop(id(t), 0) for t in batch)
                registered = list(self._registered.values())
            self._hand_out(batch)
            if batch and self.observer is not None:
                self.observer.round_done(len(batch), requests)
            now_ms = time.monotonic_ns() // 1_000_000
            wait_ms = 1000
            for target in registered:
                due = target.flush_due(now_ms)
                if due == 0:
                    self._flush(target)
                    # The next interval starts now: without asking again the thread
                    # would sleep a full second and the interval would drift to ~1 s.
                    due = target.flush_due(time.monotonic_ns() // 1_000_000)
                if due is not None:
                    wait_ms = min(wait_ms, due)
            wait_s = max(wait_ms, 1) / 1000

    def _checkpoint_loop(self) -> None:
        """Every ``checkpoint_interval_ms``, the checkpoint of each registered log (a log
        whose offsets did not change writes nothing)."""
        while not self._checkpoint_stop.wait(self._checkpoint_interval_ms / 1000):
            with self._cond:
                registered = list(self._registered.values())
            for target in registered:
                if self._checkpoint_stop.is_set():
                    return
                try:
                    target.checkpoint()
                except Exception:
                    log.exception("writing a checkpoint failed")

    def _ready_locked(self) -> bool:
        """A requested log no helper is flushing (holding ``_cond``)."""
        return any(k not in self._in_flight for k in self._requested)

    def _hand_out(self, batch: list[Flushable]) -> None:
        """Start a helper's flush of every log of ``batch`` (marked in flight; the
        round's size is reported by the caller)."""
        pool = self._pool
        for target in batch:
            try:
                if pool is not None:
                    pool.submit(self._flush_owned, target, 0)
                    continue
            except RuntimeError:  # interpreter shutdown: no new helper threads
                pass
            self._flush_owned(target, 0)

    def _flush_owned(self, target: Flushable, asked: int) -> None:
        """Flush ``target`` (in flight; ``asked``: the requests this round serves, 0 when
        the caller reports the round), again while requests came during the flush, then
        release it.  With a ring attached the next flush goes back to the ring's loop
        instead: a log that fell back to a helper once (a checkpoint held its flush
        lock, a producer snapshot or a roll was due) would otherwise stay on the helpers
        for as long as its producers keep it busy, each flush paying the GIL hand-off
        the ring exists to avoid."""
        key = id(target)
        while True:
            again: int | None = None
            try:
                self._flush(target)
                if asked and self.observer is not None:  # after: the waiters come first
                    self.observer.round_done(1, asked)
            finally:
                again = self._again_or_release(key)
            if again is None or self._hand_back(target, again):
                return
            asked = again

    def _flush(self, target: Flushable) -> None:
        try:
            started = time.perf_counter()
            target.flush()
            if self.observer is not None:
                self.observer.fsync_done(time.perf_counter() - started)
            with self._cond:
                self.fsync_rounds += 1
        except Exception:
            log.exception("flush failed")
