"""SIGKILL a writer under load: every fsync-acknowledged record must survive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from riverbed.storage import LogManager
from riverbed.testing.log_contents import served_text

WRITER = textwrap.dedent("""
    import sys, threading
    from pathlib import Path
    from riverbed.protocol.records import build_batch
    from riverbed.storage import LogConfig, LogManager

    mgr = LogManager(Path(sys.argv[1]))
    log = mgr.get_or_create("t", 0, LogConfig(segment_bytes=64 * 1024))
    out_lock = threading.Lock()

    def writer(w):
        i = 0
        while True:
            value = f"{w}-{i}".encode()
            r = log.append(build_batch([(None, value, 1)]))
            log.flush_future(r.last_offset).result()
            with out_lock:
                sys.stdout.write(f"{r.last_offset} {value.decode()}\\n")
                sys.stdout.flush()
            i += 1

    for w in range(8):
        threading.Thread(target=writer, args=(w,), daemon=True).start()
    threading.Event().wait()
""")


def test_sigkill_under_load_loses_no_acknowledged_record(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    acked: dict[int, str] = {}
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    try:
        while len(acked) < 3000 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            offset, value = line.split()
            acked[int(offset)] = value
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert len(acked) >= 3000, "writer did not acknowledge enough appends in time"
    mgr = LogManager(data_dir, start_background=False)
    log = mgr.get("t", 0)
    assert log is not None and log.log_end_offset > max(acked)
    assert log.log_start_offset == 0
    found = served_text(log)
    missing = {o: v for o, v in acked.items() if found.get(o) != v}
    assert not missing
    assert len(log.segments()) > 1
    mgr.close()
