"""A command run as a child process for tests: started, SIGTERMed or SIGKILLed, its output
kept in a log file for the failure message."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Self


class ChildProcess:
    """``argv`` as a child process, stdout and stderr appended to ``log_path`` (created if
    missing; a restart appends to the same file), stdin closed.

    ``close()`` SIGKILLs it if still running (teardown, failures included); ``stop()`` asks
    it to exit with SIGTERM first.  Neither touches a child that has already exited."""

    def __init__(self, log_path: Path, argv: Sequence[str]) -> None:
        self.args = list(argv)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def assert_alive(self) -> None:
        """``AssertionError`` with the log's last 4000 characters unless it is running."""
        assert self.proc is not None and self.proc.poll() is None, self.log()[-4000:]

    def kill(self) -> None:
        """SIGKILL, then reap it (30 s)."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self, timeout_s: float = 90) -> int:
        """SIGTERM and its exit status; ``subprocess.TimeoutExpired`` if it has not exited
        within ``timeout_s``."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout_s)

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM, and SIGKILL if it has not exited within ``timeout_s``."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.terminate(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


def run_grouped(
    argv: Sequence[str], env: dict[str, str], timeout_s: float
) -> tuple[int | None, str]:
    """Run ``argv`` to its end in its own session and process group, stdout and stderr
    together; its exit status (None when it ran past ``timeout_s``: then the whole group,
    a Spark driver's JVM and Python workers included, is SIGKILLed) and its output."""
    proc = subprocess.Popen(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        status: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        status = None
    return status, out.decode(errors="replace")
