"""One process owns a data dir: a second LogManager (or broker) on it is refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from riverbed.errors import DataDirInUseError
from riverbed.storage import LogManager


def test_second_manager_in_same_process_is_refused_until_close(tmp_path: Path) -> None:
    first = LogManager(tmp_path, start_background=False)
    with pytest.raises(DataDirInUseError, match=str(tmp_path)):
        LogManager(tmp_path, start_background=False)
    first.close()
    again = LogManager(tmp_path, start_background=False)  # the lock died with close()
    again.close()


def test_lock_held_by_another_process_names_its_pid_and_dies_with_it(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from pathlib import Path
            from riverbed.storage import LogManager
            m = LogManager(Path({str(tmp_path)!r}), start_background=False)
            print("locked", flush=True)
            sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(DataDirInUseError, match=f"pid {holder.pid}"):
            LogManager(tmp_path, start_background=False)
    finally:
        holder.kill()  # SIGKILL: no clean close, the kernel drops the flock
        holder.wait()
    LogManager(tmp_path, start_background=False).close()
