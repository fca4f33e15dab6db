"""Queue workers in processes: :class:`QueueWorkerProcesses`, for CPU-bound handlers.

The thread pool of :mod:`riverbed.queue.worker` shares one GIL; here each of
``settings.concurrency`` workers is a child process (``multiprocessing`` *spawn* context:
no librdkafka state is inherited through fork) running a one-thread
:class:`~riverbed.queue.worker.QueueWorkers` with its own share consumer.  The guarantees
are the thread pool's (at least once per record; a killed child's records come back; no
ordering).

Constraints: ``handler`` and ``on_outcome`` run in the children, so they must be
picklable (module-level functions) and their side effects happen there.  :attr:`stats`
counts outcomes over all children (shared counters).

Stopping: :meth:`stop`, or SIGTERM/SIGINT to the parent in :meth:`run`, sets a shared
event; each child finishes its running handler, acknowledges, commits and leaves the group
(the thread pool's graceful stop).  Children ignore SIGINT (a terminal's Ctrl-C reaches the
whole process group; the parent coordinates) and treat SIGTERM as a stop.  A child that
exits non-zero (a worker error) makes :meth:`stop` raise :class:`QueueError`.

Thread-safety: drive a :class:`QueueWorkerProcesses` from one thread.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
from typing import Any

from riverbed.queue.delivery import Delivery, Outcome, QueueError
from riverbed.queue.worker import Handler, OutcomeCallback, QueueWorkers, WorkerSettings
from riverbed.signals import SignalStop

_OUTCOMES = tuple(Outcome)
_ctx = multiprocessing.get_context("spawn")


def _child_main(
    index: int,
    settings: WorkerSettings,
    handler: Handler,
    on_outcome: OutcomeCallback | None,
    stopping: Any,
    counts: Any,
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    SignalStop(stopping, [signal.SIGTERM]).install()  # no lock in the handler (run's doc)

    def count(delivery: Delivery, outcome: Outcome, detail: str) -> None:
        with counts.get_lock():
            counts[_OUTCOMES.index(outcome)] += 1
        if on_outcome is not None:
            on_outcome(delivery, outcome, detail)

    one = dataclasses.replace(
        settings,
        concurrency=1,
        client_config={"client.id": f"riverbed-queue-p{index}", **settings.client_config},
    )
    workers = QueueWorkers(one, handler, count).start()
    while not stopping.wait(0.2) and not workers.stopping:
        pass
    workers.stop()  # raises QueueError (exit code 1) if the worker failed


class SharedQueueStats:
    """Outcome counters shared with the children; same reading API as ``QueueStats``."""

    def __init__(self, counts: Any) -> None:
        self._counts = counts

    def snapshot(self) -> dict[str, int]:
        """``{"accept": n, "release": n, "reject": n}`` over all children so far."""
        with self._counts.get_lock():
            return {o.value: int(self._counts[i]) for i, o in enumerate(_OUTCOMES)}


class QueueWorkerProcesses:
    """``settings.concurrency`` child processes consuming one share group with ``handler``."""

    def __init__(
        self,
        settings: WorkerSettings,
        handler: Handler,
        on_outcome: OutcomeCallback | None = None,
    ) -> None:
        self.settings = settings
        self._handler = handler
        self._on_outcome = on_outcome
        self._stopping = _ctx.Event()
        self._counts = _ctx.Array("q", len(_OUTCOMES))
        self.stats = SharedQueueStats(self._counts)
        self._procs: list[Any] = []

    def start(self) -> QueueWorkerProcesses:
        if self._procs:
            raise QueueError("workers already started")
        for index in range(self.settings.concurrency):
            proc = _ctx.Process(
                target=_child_main,
                args=(
                    index,
                    self.settings,
                    self._handler,
                    self._on_outcome,
                    self._stopping,
                    self._counts,
                ),
                name=f"riverbed-queue-p{index}",
            )
            proc.start()
            self._procs.append(proc)
        return self

    def request_stop(self) -> None:
        self._stopping.set()

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop every child gracefully and wait; :class:`QueueError` if one failed."""
        self._stopping.set()
        for proc in self._procs:
            proc.join(timeout_s)
        failed = [p.name for p in self._procs if p.exitcode not in (0, None)]
        if failed:
            raise QueueError(f"queue worker process(es) failed: {', '.join(failed)}")

    def run(self) -> None:
        """Start, block until SIGTERM/SIGINT (or :meth:`request_stop`), stop gracefully.

        Main thread only (installs signal handlers; restores the previous ones).  The
        handlers, here and in the children, take no lock (:class:`riverbed.signals.SignalStop`):
        the shared event's ``set()`` takes its non-reentrant lock, which ``wait()`` holds on
        the same thread for a moment, and would wait for it forever.
        """
        with SignalStop(self._stopping):
            self.start()
            while not self._stopping.wait(0.2):
                if all(not p.is_alive() for p in self._procs):
                    break
            self.stop()

    def __enter__(self) -> QueueWorkerProcesses:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
