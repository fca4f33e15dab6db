"""The connector loop's SIGTERM handler takes no lock (riverbed.cdc.runner).

A Python signal handler runs on the main thread between two bytecodes.  The loop's idle
``stop.wait()`` holds the stop event's (non-reentrant) lock for a moment on the way in and
out; a handler that called ``stop.set()`` right then waited for that lock, held by its own
thread, forever: the SIGTERMed connector never exited (a rare CI failure of
test_cdc_sqlite_crash).  Here the moment is made certain: the signal is sent while the lock
is held.  Before the fix the child hung (killed at the timeout); now it closes and exits 0.
"""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import os, signal, threading
from riverbed.cdc.runner import run

stop = threading.Event()

class Connector:
    def poll_once(self):
        with stop._cond:  # what stop.wait() holds on its way in and out
            os.kill(os.getpid(), signal.SIGTERM)
        return False

    def close(self, timeout_s):
        print("closed", flush=True)

run(Connector(), stop=stop, idle_wait_s=0.01)
"""


def test_sigterm_while_the_stop_events_lock_is_held_still_stops() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, [b"closed"]), done.stderr.decode()
