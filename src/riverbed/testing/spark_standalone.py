"""A Spark standalone cluster (one master, two workers) on this machine, from pyspark's jars.

The scale-out tests run the page-views pipeline with ``--master spark://...`` so that its
source's ``read()`` runs in executors that are other JVMs with their own Python workers,
as on a real cluster.  No Spark distribution is needed: pyspark's wheel ships every jar
(``pyspark/jars``), and ``SPARK_HOME`` pointed at the pyspark package is enough for a
worker to build its executors' command line.

Processes (each a child JVM in its own session, on loopback ports picked free)::

    org.apache.spark.deploy.master.Master  --host 127.0.0.1 --port P --webui-port W
    org.apache.spark.deploy.worker.Worker  --cores 1 --memory 1g spark://127.0.0.1:P  (x2)
        -> executors, started by the workers for each application

Work dir (temporary, removed by :meth:`SparkStandalone.stop`): ``master.log``,
``worker-<n>.log``, ``worker-<n>/`` (the workers' ``--work-dir``: executors' stdout/stderr).

Thread-safety: drive it from one thread.  Crash behaviour: :meth:`stop` SIGKILLs the
workers' process groups (their executors are in the same group) and the master, and an
``atexit`` hook does it if the interpreter exits first; a SIGKILLed test process leaves
them orphaned (``ps`` shows the work dir).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from riverbed.errors import RiverbedError
from riverbed.testing.kafka_reference import free_port
from riverbed.testing.lifecycle import StartStopContext


class SparkStandaloneError(RiverbedError):
    """The master or a worker did not start."""


def spark_home() -> Path:
    """The installed pyspark package: its ``jars/`` are a whole Spark runtime."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class SparkStandalone(StartStopContext):
    """A master and ``workers`` workers of ``cores`` cores each.  Use as a context manager."""

    workers: int = 2
    cores: int = 1
    worker_memory: str = "1g"
    daemon_heap: str = "192m"
    startup_timeout_s: float = 180.0
    workdir: Path | None = None
    port: int = 0
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self) -> SparkStandalone:
        """Start the master, then the workers; return once every worker has registered."""
        self.workdir = self.workdir or Path(tempfile.mkdtemp(prefix="riverbed-spark-cluster-"))
        self.port = self.port or free_port()
        atexit.register(self.stop)
        deadline = time.monotonic() + self.startup_timeout_s
        try:
            master_log = self.workdir / "master.log"
            self._launch(
                "org.apache.spark.deploy.master.Master",
                [
                    *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port"),
                    str(free_port()),
                ],
                master_log,
            )
            self._wait_for(master_log, "I have been elected leader", deadline)
            for n in range(1, self.workers + 1):
                work = self.workdir / f"worker-{n}"
                work.mkdir()
                log = self.workdir / f"worker-{n}.log"
                self._launch(
                    "org.apache.spark.deploy.worker.Worker",
                    [
                        *("--host", "127.0.0.1", "--port", str(free_port())),
                        *("--webui-port", str(free_port()), "--cores", str(self.cores)),
                        *("--memory", self.worker_memory, "--work-dir", str(work)),
                        self.master_url,
                    ],
                    log,
                )
            for n in range(1, self.workers + 1):
                log = self.workdir / f"worker-{n}.log"
                self._wait_for(log, "Successfully registered with master", deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGKILL workers (with their executors) and the master; remove the work dir."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(30)
        self._procs.clear()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if self.workdir is not None and not os.environ.get("RIVERBED_KEEP_SPARK_DIR"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _launch(self, main_class: str, args: list[str], log: Path) -> None:
        java = shutil.which("java")
        if java is None:
            raise SparkStandaloneError("java not found on PATH")
        home = spark_home()
        # SPARK_SCALA_VERSION: without it a worker looks for a source build to launch executors
        # ("Cannot find any build directories").
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_SCALA_VERSION": "2.13",
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        with open(log, "ab") as out:
            self._procs.append(
                subprocess.Popen(
                    [
                        java,
                        "-cp",
                        str(home / "jars" / "*"),
                        f"-Xmx{self.daemon_heap}",
                        "-XX:+UseSerialGC",
                        main_class,
                        *args,
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
            )

    def _wait_for(self, log: Path, marker: str, deadline: float) -> None:
        proc = self._procs[-1]
        while time.monotonic() < deadline:
            if log.exists() and marker in log.read_text(errors="replace"):
                return
            if any(p.poll() is not None for p in self._procs):
                break
            time.sleep(0.2)
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        state = "exited" if proc.poll() is not None else "not ready in time"
        raise SparkStandaloneError(f"Spark {log.stem} {state} ({marker!r} not logged):\n{tail}")
