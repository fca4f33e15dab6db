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
otherwise the caller stops the loop with the ``stop`` event.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Any, Protocol


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
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():

        def request_stop(_signum: int, _frame: FrameType | None) -> None:
            stop_event.set()

        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, request_stop)
    try:
        while not stop_event.is_set():
            if not connector.poll_once():
                stop_event.wait(idle_wait_s)
    except BaseException:
        with contextlib.suppress(Exception):  # the first error is the one to report
            connector.close(timeout_s=min(close_timeout_s, 5.0))
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    connector.close(timeout_s=close_timeout_s)
