"""The foreground loop every connector runs in: poll until SIGTERM/SIGINT, then close.

::

    connector = SqliteConnector(...)
    connector.start()          # validate, create topics, snapshot / resume
    run(connector)             # returns after SIGTERM or SIGINT, once closed -> exit 0

A :class:`Connector` is driven from one thread: :meth:`Connector.poll_once` does one cycle
(read the source, send, release the source up to what the broker acknowledged) and says
whether it found work; when it did not, the loop waits ``idle_wait_s`` (or until a stop
is requested) before the next cycle.  On SIGTERM the loop stops between cycles and calls
:meth:`Connector.close`, which waits for outstanding acknowledgements and releases the
source up to them.

**Crash behaviour.**  Nothing here needs a clean exit: connectors release their source
(delete change rows, confirm an LSN) only after the broker acknowledged, so a SIGKILL at
any moment leaves the source holding everything not yet acknowledged, and the next start
re-sends it (duplicates of unacknowledged changes are possible, loss is not).

Signal handlers are installed only when :func:`run` is called from the main thread;
otherwise the caller stops the loop with the ``stop`` event.  The handlers take no lock
(:class:`riverbed.signals.SignalStop`): ``Event.set()`` takes the event's non-reentrant
lock, and a Python signal handler runs on the main thread between two bytecodes --
possibly inside ``stop.wait()`` while that thread holds the very same lock, where the
handler would wait for itself forever (a SIGTERMed connector that never exited).  The
handler records the signal, which the loop checks, and a watcher thread sets the event,
which ends the idle wait at once.

The stop and the close are logged (logger ``riverbed.cdc.runner``, INFO) with how long
the close took, so a slow shutdown says which phase it spent its time in.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from typing import Protocol

from riverbed.signals import SignalStop

log = logging.getLogger(__name__)


class Connector(Protocol):
    """What :func:`run` drives.  Not called concurrently."""

    def poll_once(self) -> bool:
        """One cycle; ``True`` when it moved changes (so the loop polls again at once).
        Raises a :class:`~riverbed.errors.CdcError` when capture cannot go on."""
        ...

    def close(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for acknowledgements, release the source up to them,
        and free resources."""
        ...


def run(
    connector: Connector,
    *,
    stop: threading.Event | None = None,
    idle_wait_s: float = 0.05,
    close_timeout_s: float = 30.0,
) -> None:
    """Poll ``connector`` until SIGTERM/SIGINT (or ``stop`` is set), then close it.

    Returns normally after a requested stop (the CLI exits 0); an exception from the
    connector propagates after a best-effort close."""
    stop_event = stop if stop is not None else threading.Event()
    signals = SignalStop(stop_event)  # no lock taken in the handlers (module doc)
    if threading.current_thread() is threading.main_thread():
        signals.install()
    try:
        while not signals.is_set():
            if not connector.poll_once():
                stop_event.wait(idle_wait_s)
    except BaseException:
        with contextlib.suppress(Exception):  # the first error is the one to report
            connector.close(timeout_s=min(close_timeout_s, 5.0))
        raise
    finally:
        signals.restore()
    received = signals.received
    why = signal.Signals(received).name if received is not None else "stop requested"
    log.info("%s: closing (up to %.0f s for acknowledgements)", why, close_timeout_s)
    started = time.monotonic()
    connector.close(timeout_s=close_timeout_s)
    log.info("closed in %.2f s", time.monotonic() - started)
