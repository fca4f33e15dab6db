"""``riverbed broker`` as a child process: started, SIGKILLed and restarted in place.

For fault tests and the reliability campaigns (:mod:`riverbed.testing.crash_campaign`,
:mod:`riverbed.testing.fuzz`): unlike :class:`~riverbed.testing.embedded.EmbeddedBroker`,
a child process can be killed with ``SIGKILL`` (no clean shutdown, no flush) and its
memory measured on its own (``VmRSS`` in ``/proc/<pid>/status``).

The broker's stdout and stderr are appended to ``log_path``, each start preceded by a
``--- start #N`` line; :meth:`BrokerProcess.tail` quotes the end of it for failure
messages.  Every wait is a condition polled against a deadline (:func:`wait_until`),
never a fixed sleep.  Driven by one thread; not thread-safe.  If the driving process dies,
the child is orphaned: it keeps its port until killed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from riverbed.testing.kafka_reference import free_port

__all__ = ["CLI", "BrokerProcess", "free_port", "wait_until"]

CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "broker"]


def wait_until(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    step: Callable[[], object] | None = None,
) -> None:
    """Poll ``condition`` (running ``step`` between polls) until true or the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        if step is not None:
            step()
        else:
            time.sleep(0.02)  # polling interval only; the condition is what we wait on


class BrokerProcess:
    """A ``riverbed broker`` child on ``data_dir`` and a fixed port, killable with SIGKILL."""

    def __init__(
        self,
        data_dir: Path,
        port: int,
        log_path: Path,
        config: Mapping[str, str] | None = None,
        log_level: str = "WARNING",
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``env``: variables added to this process's environment for the child."""
        self.data_dir = data_dir
        self.env = dict(env or {})
        self.port = port
        self.log_path = log_path
        self.config = dict(config or {})
        self.log_level = log_level
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "broker not running"
        return self.proc.pid

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the broker and return once it accepts connections."""
        args = [
            *CLI,
            "--data-dir",
            str(self.data_dir),
            "--listen",
            self.bootstrap_servers,
            "--log-level",
            self.log_level,
        ]
        for key, value in self.config.items():
            args += ["--config", f"{key}={value}"]
        with open(self.log_path, "ab") as log:
            log.write(f"--- start #{self.starts + 1}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                args,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **self.env} if self.env else None,
            )
        self.starts += 1
        proc = self.proc

        def accepting() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"broker exited with {proc.returncode}:\n{self.tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            except OSError:
                return False
            return True

        wait_until(accepting, timeout_s, f"broker start #{self.starts} to accept connections")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush; returns once the process is reaped."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        self.proc = None

    def rss_bytes(self) -> int:
        """The broker's resident set size (``VmRSS``), in bytes."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no VmRSS in /proc/{self.pid}/status")

    def tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
