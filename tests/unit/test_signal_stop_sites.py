"""Every command's SIGTERM handler takes no lock (riverbed.signals, tests/unit/test_signals.py).

Each case runs the real entry point in a child process with its broker-facing part
replaced by a fake that sends SIGTERM while holding the stop event's lock -- the moment
where a handler calling ``stop.set()`` waited for its own thread forever.  Before the fix
each child hung (killed at the timeout); now each stops and exits 0.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PRELUDE = """
import os, signal, sys, threading

def sigterm_holding(event):
    with event._cond:  # what event.wait() holds on its way in and out
        os.kill(os.getpid(), signal.SIGTERM)
"""

CASES = {
    "queue-worker-threads": """
from riverbed.queue.worker import QueueWorkers

class Workers(QueueWorkers):
    def __init__(self):
        self._stopping = threading.Event()
        self._threads = []
        self._workers = []

    def start(self):
        sigterm_holding(self._stopping)
        return self

Workers().run()
""",
    "queue-worker-processes": """
from riverbed.queue.processes import QueueWorkerProcesses, _ctx

class Processes(QueueWorkerProcesses):
    def __init__(self):
        self._stopping = _ctx.Event()
        self._procs = []

    def start(self):
        sigterm_holding(self._stopping)
        return self

Processes().run()
""",
    "queue-worker-child": """
from riverbed.queue import processes
from riverbed.queue.worker import WorkerSettings

stopping = processes._ctx.Event()

class Workers:
    stopping = False

    def __init__(self, *args):
        pass

    def start(self):
        sigterm_holding(stopping)
        return self

    def stop(self):
        pass

processes.QueueWorkers = Workers
counts = processes._ctx.Array("q", 3)
processes._child_main(0, WorkerSettings("127.0.0.1:1", "g", ("t",)), print, None, stopping, counts)
""",
    "pipeline-run": """
from riverbed.cli import pipeline_command

class TrapEvent(threading.Event):
    def wait(self, timeout=None):
        if not getattr(self, "trapped", False):
            self.trapped = True
            sigterm_holding(self)
        return super().wait(timeout)

class Query:
    isActive = True
    status = {"isTriggerActive": False}

    def exception(self):
        return None

    def stop(self):
        pass

pipeline_command.threading = type(sys)("threading")
pipeline_command.threading.Event = TrapEvent
pipeline_command.wait_for_queries([Query()])
""",
    "views-run": """
from riverbed.cli import views_command

class View:
    def close(self):
        pass

def run_views(opened, bootstrap, topics, group, *, stop, **kwargs):
    sigterm_holding(stop)
    assert stop.wait(60)
    return 0

views_command.check_reachable = lambda bootstrap: None
views_command.open_view = lambda spec: View()
views_command.run_views = run_views
views_command.run_command.main(
    ["--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--view", "search:x"],
    standalone_mode=False,
)
""",
    "bank-writer": """
from riverbed.eventsourcing import bank, client, writer

class Writer:
    def __init__(self, *args, **kwargs):
        pass

    def run(self, stop, on_ready=None):
        sigterm_holding(stop)
        assert stop.wait(60)

client.create_topics = lambda *args, **kwargs: None
writer.CommandWriter = Writer
assert bank.main(["writer", "--bootstrap-server", "127.0.0.1:1", "--writer-id", "w"]) == 0
""",
    "cdc-start-up": """
from riverbed.cli.cdc_command import _stop_on_sigterm

stop = _stop_on_sigterm()
sigterm_holding(stop)
assert stop.wait(60)
""",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sigterm_while_the_stop_events_lock_is_held_still_stops(case: str) -> None:
    script = PRELUDE + CASES[case] + "\nprint('stopped', flush=True)\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, [b"stopped"]), done.stderr.decode()
