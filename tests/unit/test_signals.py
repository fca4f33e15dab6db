"""riverbed.signals.SignalStop: a SIGTERM handler that takes no lock, yet wakes waiters.

A Python signal handler runs on the main thread between two bytecodes.  ``Event.wait()``
holds the event's non-reentrant lock for a moment on its way in and out; a handler that
called ``stop.set()`` right then waited for that lock, held by its own thread, forever
(fixed in ee7bb7d: a SIGTERMed CDC connector that never exited).  Here the moment is made
certain: the signal is sent while the lock is held, in a child process (a hang there is
killed at the timeout instead of hanging the suite), for both kinds of event the code
uses: ``threading.Event`` and a ``multiprocessing`` Event.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from riverbed.signals import SignalStop

CHILD = """
import multiprocessing, os, signal, threading
from riverbed.signals import SignalStop

stop = {event}
with SignalStop(stop) as signals:
    with stop._cond:  # what stop.wait() holds on its way in and out
        os.kill(os.getpid(), signal.SIGTERM)
    woke = stop.wait(60)
print("stopped", woke, signals.received == signal.SIGTERM, flush=True)
"""


@pytest.mark.parametrize(
    "event", ["threading.Event()", "multiprocessing.get_context('spawn').Event()"]
)
def test_a_signal_while_the_events_lock_is_held_still_sets_it(event: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(event=event)], capture_output=True, timeout=60
    )
    assert (done.returncode, done.stdout.split()) == (0, [b"stopped", b"True", b"True"]), (
        done.stderr.decode()
    )


def test_a_waiter_on_another_thread_wakes_and_the_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    stop = threading.Event()
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(stop.wait(60)))
    with SignalStop(stop) as signals:
        assert signal.getsignal(signal.SIGTERM) != before
        waiter.start()
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)  # a second one adds nothing
        waiter.join(60)
    assert woke == [True]
    assert signals.received == signal.SIGTERM and signals.is_set()
    assert signal.getsignal(signal.SIGTERM) == before


def test_restore_returns_after_a_handled_signal_has_set_the_event() -> None:
    stop = threading.Event()
    signals = SignalStop(stop, [signal.SIGINT]).install()
    os.kill(os.getpid(), signal.SIGINT)
    signals.restore()
    assert stop.is_set()
    assert signals.received == signal.SIGINT


def test_without_a_signal_nothing_is_set() -> None:
    with SignalStop() as signals:
        pass
    assert signals.received is None and not signals.is_set()


def test_only_the_main_thread_installs() -> None:
    errors: list[BaseException] = []

    def install() -> None:
        try:
            SignalStop().install()
        except ValueError as exc:
            errors.append(exc)

    thread = threading.Thread(target=install)
    thread.start()
    thread.join(60)
    assert len(errors) == 1
