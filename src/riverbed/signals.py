"""Stop on SIGTERM/SIGINT without taking a lock in the signal handler.

::

    stop = threading.Event()
    with SignalStop(stop):            # main thread only
        while not stop.wait(0.2):     # wakes at once on SIGTERM/SIGINT
            ...

**Why.**  A Python signal handler runs on the main thread between two bytecodes, possibly
while that thread holds a lock.  ``threading.Event.set()`` takes the event's Condition
lock, a plain non-reentrant ``Lock``, which ``Event.wait()`` holds for a few bytecodes on
its way in and out; a ``multiprocessing`` Event's lock is just as non-reentrant, and so are
the locks of ``queue.Queue`` and of logging handlers.  A handler that called ``stop.set()``
at that moment waited for a lock its own thread holds: the process never exited (SIGTERM
ignored from then on, only SIGKILL ends it -- fixed in ee7bb7d, the CDC connector).

**How.**  The handler installed here takes no lock: it records the signal number in a
plain attribute (:attr:`SignalStop.received`) and writes one byte to a non-blocking
self-pipe (a system call, no Python lock).  A daemon watcher thread
(``riverbed-signal-stop``) blocked on the pipe's other end then calls ``stop.set()`` from
its own thread, so it merely waits until the main thread leaves the lock, and every waiter,
on any thread, wakes promptly.  ``signal.set_wakeup_fd`` is not used: it is one per process
and asyncio owns it while a loop runs (an asyncio program uses ``loop.add_signal_handler``
instead, which is already safe).

Invariants: after :meth:`SignalStop.restore` returns, a signal handled before it has set
``stop`` (the watcher drains the pipe before it exits).  ``received`` is the first signal
number handled, or ``None``.  A second signal adds nothing (``stop`` is already set or about
to be).  ``stop`` is whatever has ``set()`` and ``is_set()``: a ``threading.Event``, a
``multiprocessing`` Event.  Crash behaviour: nothing persists; a process killed with the
watcher mid-way just dies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterable
from types import FrameType, TracebackType
from typing import Any, Protocol


class Settable(Protocol):
    """A stop event: ``threading.Event``, a ``multiprocessing`` Event, ..."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class SignalStop:
    """Handlers for ``signals`` that request ``stop`` (see the module doc).

    :meth:`install` (or ``with``) installs them and starts the watcher thread; it must be
    called from the main thread (``ValueError`` otherwise, as ``signal.signal``).
    :meth:`restore` puts the previous handlers back and ends the watcher; a process that
    keeps the handlers for good simply never calls it.
    """

    def __init__(
        self, stop: Settable | None = None, signals: Iterable[signal.Signals] = STOP_SIGNALS
    ) -> None:
        self.stop: Settable = stop if stop is not None else threading.Event()
        self.signals = tuple(signals)
        self.received: int | None = None
        self._previous: dict[signal.Signals, Any] = {}
        self._write_fd: int | None = None
        self._watcher: threading.Thread | None = None

    def is_set(self) -> bool:
        """True once a signal was handled or ``stop`` was set otherwise (not for handlers)."""
        return self.received is not None or self.stop.is_set()

    def install(self) -> SignalStop:
        if self._watcher is not None:
            raise RuntimeError("signal handlers already installed")
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("signal handlers can only be installed from the main thread")
        read_fd, write_fd = os.pipe()  # not inherited by children (O_CLOEXEC)
        os.set_blocking(write_fd, False)
        self._write_fd = write_fd
        self._watcher = threading.Thread(
            target=self._watch, args=(read_fd,), name="riverbed-signal-stop", daemon=True
        )
        self._watcher.start()
        for signum in self.signals:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def restore(self, timeout_s: float = 5.0) -> None:
        """Put the previous handlers back, then end the watcher (after it set ``stop``
        for any signal already handled).  Main thread only."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        if self._write_fd is not None:
            os.close(self._write_fd)  # the watcher reads what is left, then end of file
            self._write_fd = None
        if self._watcher is not None:
            self._watcher.join(timeout_s)
            self._watcher = None

    def __enter__(self) -> SignalStop:
        return self.install()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        # Runs on the main thread between two bytecodes: no lock may be taken here.
        if self.received is None:
            self.received = signum
        fd = self._write_fd
        if fd is not None:
            with contextlib.suppress(OSError):  # pipe full: a wake-up is already pending
                os.write(fd, b"\0")

    def _watch(self, read_fd: int) -> None:
        try:
            while os.read(read_fd, 64):
                self.stop.set()
        finally:
            os.close(read_fd)
