"""A private RabbitMQ node for benchmarks: Debian's ``rabbitmq-server`` on free ports.

Everything lives in one temporary directory (``RABBITMQ_MNESIA_BASE``, logs, config, an
empty enabled-plugins file so no management plugin starts, ``HOME`` for the Erlang
cookie); the AMQP port, the distribution port and epmd's port are free ports picked here,
so nothing touches a system-wide broker.  :meth:`RabbitNode.stop` asks the node to stop
(``rabbitmqctl stop``), kills its process group if it lingers, stops the private epmd and
removes the directory.

Install: ``apt-get install -y rabbitmq-server`` (3.10 on Debian 12; not started by the
package here).  Python client: ``pika`` (dev extra).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from riverbed.testing.kafka_reference import free_port
from riverbed.testing.lifecycle import StartStopContext

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")


class RabbitNode(StartStopContext):
    """One RabbitMQ node on 127.0.0.1; use as a context manager."""

    def __init__(self, startup_timeout_s: float = 120.0) -> None:
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self.workdir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._env: dict[str, str] = {}

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def start(self) -> RabbitNode:
        if not (RABBIT_BIN / "rabbitmq-server").exists():
            raise RuntimeError("rabbitmq-server not installed (apt-get install rabbitmq-server)")
        self.workdir = Path(tempfile.mkdtemp(prefix="riverbed-rabbit-"))
        self.port = free_port()
        dist_port, epmd_port = free_port(), free_port()
        (self.workdir / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\n"
            "loopback_users = none\n"
            f"log.file.level = warning\n"
        )
        (self.workdir / "enabled_plugins").write_text("[].\n")
        self._env = {
            **os.environ,
            "HOME": str(self.workdir),
            "RABBITMQ_NODENAME": f"bench{os.getpid()}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "ERL_EPMD_PORT": str(epmd_port),
            "RABBITMQ_MNESIA_BASE": str(self.workdir / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.workdir / "log"),
            "RABBITMQ_CONFIG_FILE": str(self.workdir / "rabbitmq"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.workdir / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(self.workdir / "rabbit.pid"),
            "RABBITMQ_ALLOW_INPUT": "",
        }
        out = open(self.workdir / "stdout", "wb")  # noqa: SIM115 - owned by the child
        self._proc = subprocess.Popen(
            [str(RABBIT_BIN / "rabbitmq-server")],
            env=self._env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.workdir,
        )
        out.close()
        self._wait_ready(time.monotonic() + self.startup_timeout_s)
        return self

    def _wait_ready(self, deadline: float) -> None:
        import pika

        assert self._proc is not None and self.workdir is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    "rabbitmq-server exited:\n"
                    + (self.workdir / "stdout").read_text(errors="replace")[-3000:]
                )
            try:
                pika.BlockingConnection(pika.URLParameters(self.url)).close()
                return
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"rabbitmq not ready in {self.startup_timeout_s}s")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            subprocess.run(
                [str(RABBIT_BIN / "rabbitmqctl"), "stop"],
                env=self._env,
                capture_output=True,
                timeout=60,
                check=False,
            )
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if self._env.get("ERL_EPMD_PORT") and shutil.which("epmd"):
            subprocess.run(
                ["epmd", "-port", self._env["ERL_EPMD_PORT"], "-kill"],
                capture_output=True,
                timeout=30,
                check=False,
            )
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
