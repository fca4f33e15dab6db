"""kill -9 of a writer process at each step of the zero window's life
(:mod:`riverbed.storage.preallocate`), then recovery in this process.

The child appends small records from 4 threads through a real GroupCommitFlusher (each
waits for its fsync: acknowledged) and prints each acknowledged offset; a named failure
point (:mod:`riverbed.storage.faults`) blocks one step, the child prints ``REACHED``, and
this process SIGKILLs it there.  After recovery: every acknowledged record is served at
its offset, no segment file keeps bytes after its logical end, and nothing is logged at
WARNING or above (a zero tail is preallocated space, cut at INFO).

Steps: the extension not yet written; written but not fsynced; appends into the window
whose fsync never came; a roll whose cut of the sealed segment's window never came (also
with that segment flushed to its end and checkpointed: trusted, opened lazily); a clean
close stopped before its cut, and after its cut but before its fsync and marker.
About 1-2 s per step (a Python start each).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from riverbed.clock import ManualClock
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.checkpoint import read_checkpoint
from riverbed.testing.log_contents import batches_end, served_text

CONFIG = {"segment_bytes": 1 << 30, "index_interval_bytes": 256}

CHILD = textwrap.dedent("""
    import os, sys, threading
    from pathlib import Path
    from riverbed.protocol.records import build_batch
    from riverbed.storage import LogConfig, PartitionLog, faults
    from riverbed.storage.flusher import GroupCommitFlusher

    directory, step = Path(sys.argv[1]), sys.argv[2]
    flusher = GroupCommitFlusher()
    flusher.start()
    log = PartitionLog.open(
        directory, LogConfig(segment_bytes=1 << 30, index_interval_bytes=256), flusher=flusher
    )
    out = threading.Lock()
    acks = threading.Semaphore(0)
    paused = threading.Event()

    def say(line):
        with out:
            sys.stdout.write(line + "\\n")
            sys.stdout.flush()

    def appender(w):
        i = 0
        while True:
            while paused.is_set():
                threading.Event().wait(0.01)
            value = b"w%d-%06d-" % (w, i) + b"x" * 120
            r = log.append(build_batch([(None, value, 1_700_000_000_000)]))
            log.flush_future(r.last_offset).result(300)
            say("ACK %d %s" % (r.last_offset, value.decode()))
            acks.release()
            i += 1

    def active():
        return log._segments[-1]  # no lock: the fault predicates run under it at times

    def window_exists():
        seg = active()
        return seg.allocated > seg.size

    armed = []  # the context managers stay referenced: collected, they would disarm

    def arm(name, match=None):
        armed.append(faults.inject(name, block=True, match=match))
        fault = armed[-1].__enter__()
        def watch():
            fault.wait_reached(300)
            say("REACHED")
        threading.Thread(target=watch, daemon=True).start()

    def after_acks(n):
        for _ in range(n):
            acks.acquire()

    if step == "extension-not-written":
        arm("segment.zero_fill")
    elif step == "extension-not-synced":
        # the first fsync once a window exists: the one that would sync its zeros.  (Not
        # "the file is longer than the logical end": an append between its write and its
        # size update looks like that without a window, and the kill then finds none.)
        arm("segment.fsync", lambda p: window_exists())
    for w in range(4):
        threading.Thread(target=appender, args=(w,), daemon=True).start()
    if step == "appended-into-window-not-synced":
        after_acks(40)
        while not window_exists():
            after_acks(1)
        arm("segment.fsync")
    elif step == "roll-cut-not-done":
        after_acks(40)
        while not window_exists():
            after_acks(1)
        arm("segment.truncate")
        threading.Thread(target=log.roll, daemon=True).start()
    elif step == "roll-cut-not-done-checkpointed":
        # flushed to its end while active and checkpointed: the sealed segment is below
        # the recovery point (trusted, opened lazily) when its cut never came
        after_acks(40)
        while not window_exists():
            after_acks(1)
        paused.set()
        while log.flushed_offset < log.log_end_offset:
            threading.Event().wait(0.01)
        log.checkpoint()
        arm("segment.truncate")
        threading.Thread(target=log.roll, daemon=True).start()
    elif step in ("close-before-cut", "close-after-cut"):
        after_acks(40)
        while not window_exists():
            after_acks(1)
        paused.set()  # appenders stop at their next record
        if step == "close-before-cut":
            arm("segment.truncate")
        else:  # the fsync of the cut file (no window left)
            arm("segment.fsync", lambda p: os.path.getsize(p) == active().size)
        threading.Thread(target=log.close, daemon=True).start()
    threading.Event().wait()
""")

STEPS_WITH_ZEROS = {
    "extension-not-synced": True,
    "appended-into-window-not-synced": True,
    "roll-cut-not-done": True,
    "roll-cut-not-done-checkpointed": True,
    "close-before-cut": True,
    "extension-not-written": False,
    "close-after-cut": False,
}


@pytest.mark.parametrize("step", list(STEPS_WITH_ZEROS))
def test_kill_at_each_zero_window_step_loses_no_ack_and_warns_nothing(
    tmp_path: Path, step: str, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "t-0"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(directory), step],
        stdout=subprocess.PIPE,
        text=True,
    )
    acked: dict[int, str] = {}
    reached = False
    watchdog = threading.Timer(180, proc.kill)  # a child that hangs ends the read below
    watchdog.start()
    assert proc.stdout is not None
    try:
        while True:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("ACK "):
                _a, offset, value = line.split()
                acked[int(offset)] = value
            elif line.strip() == "REACHED":
                reached = True
                break
    finally:
        watchdog.cancel()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert reached, f"the child never reached {step} ({len(acked)} acks)"
    zero_tail = any(
        os.path.getsize(p) > batches_end(p.read_bytes()) for p in directory.glob("*.log")
    )
    assert zero_tail == STEPS_WITH_ZEROS[step], "the crash state is not the step's"
    if step == "roll-cut-not-done-checkpointed":  # the sealed segment is trusted at load
        bases = sorted(int(p.name[:20]) for p in directory.glob("*.log"))
        assert len(bases) == 2 and read_checkpoint(directory).recovery_point >= bases[1]
    caplog.set_level(logging.INFO, logger="riverbed.storage")
    log = PartitionLog.open(directory, LogConfig(**CONFIG), clock=ManualClock())  # type: ignore[arg-type]
    try:
        assert log.offline_error is None, log.offline_error
        found = served_text(log)
        lost = {o: v for o, v in acked.items() if found.get(o) != v}
        assert not lost, f"acknowledged records lost: {sorted(lost)[:5]}"
        assert all(v.startswith("w") for v in found.values())
        for seg in log.segments():
            assert os.path.getsize(seg.log_path) == seg.size, seg
        bad = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert not bad, bad
        assert ("preallocated zeros" in caplog.text) == STEPS_WITH_ZEROS[step]
    finally:
        log.close()
