"""Kafka Connect in distributed mode (``org.apache.kafka:connect-runtime`` 4.4.0) with
Debezium's PostgreSQL connector (``io.debezium:debezium-connector-postgres`` 3.6.1.Final),
its internal topics and its output on a Riverbed broker (issue 11).

The Maven project ``tests/integration/kafka_connect/connect_app/`` (``pom.xml``:
connect-runtime + connect-json 4.4.0, debezium-connector-postgres 3.6.1.Final, log4j2; one
source file, a compatibility shim: Debezium 3.6.1 calls
``org.apache.kafka.common.utils.Sanitizer``, which Kafka 4.4.0 moved to ``...utils.internals``)
is built once by :func:`riverbed.testing.java_app.build_java_app` and cached::

    ~/.cache/riverbed/kafka-connect/<sha256 of pom.xml + sources, 16 hex>/
        libs/*.jar     mvn -q dependency:copy-dependencies (Maven Central, first time only)
        app.jar        the shim (javac --release 17 + jar), first on the class path
        complete       written last; .lock: flock(2) around the build

Everything is on one class path (no ``plugin.path``): Connect finds the connector there.

A running worker (:class:`ConnectWorker`) lives in a work dir: ``worker.properties``,
``log4j2.properties``, ``connect.log`` (the worker's log) and ``stdout``.  It is
``org.apache.kafka.connect.cli.ConnectDistributed`` with :func:`worker_properties`: group
``group_id``, its config/offset/status topics ``<group>-configs`` / ``-offsets`` /
``-status`` created by the worker through the AdminClient (compacted, replication factor 1),
JsonConverter for keys and values with ``schemas.enable=false`` (the format of
``riverbed cdc``), the REST API on ``127.0.0.1:<rest_port>``, offsets flushed every second.
``exactly_once=True`` adds ``exactly.once.source.support=enabled``: source records and their
offsets are then written in one Kafka transaction per batch.

The REST API is reached with :mod:`urllib` (:meth:`ConnectWorker.rest`).  :meth:`start`
returns once ``GET /`` answers; the worker may still be joining its group then, so
:meth:`ConnectWorker.create_connector` retries while Connect answers 409, and
:meth:`ConnectWorker.running` is the condition to wait on (statuses reported by this very
worker: the status topic replays a killed predecessor's).  Other settings:
``plugin.discovery=service_load`` (every plugin on the class path has a ServiceLoader
manifest; skips a ~5 s reflective scan).

Thread-safety and crash behaviour: one thread drives a worker.  :meth:`ConnectWorker.stop`
sends SIGTERM (Connect stops its tasks, commits offsets and leaves the group) and SIGKILLs
the JVM's process group after a deadline; :meth:`ConnectWorker.kill` SIGKILLs at once; an
``atexit`` hook kills a worker left running when the interpreter exits.  A test killed hard
leaves the JVM behind: its pid is on a ``--- java pid N`` line of ``stdout``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from riverbed.errors import RiverbedError
from riverbed.testing.debezium_embedded import PostgresSource
from riverbed.testing.java_app import JavaAppBuild, build_java_app
from riverbed.testing.kafka_reference import free_port
from riverbed.testing.lifecycle import StartStopContext, log_tail, stop_process_group

__all__ = [
    "CONNECT_VERSION",
    "DEBEZIUM_VERSION",
    "ConnectError",
    "ConnectWorker",
    "debezium_postgres_config",
    "default_project_dir",
    "ensure_connect",
    "worker_properties",
]

CONNECT_VERSION = "4.4.0"
DEBEZIUM_VERSION = "3.6.1.Final"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"

_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {dir}/connect.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


class ConnectError(RiverbedError):
    """Kafka Connect could not be resolved or started, exited, or its REST API refused a
    request."""


def default_project_dir() -> Path:
    """``tests/integration/kafka_connect/connect_app`` of this checkout."""
    return (
        Path(__file__).resolve().parents[3] / "tests" / "integration" / "kafka_connect"
    ) / "connect_app"


def ensure_connect(project: Path | None = None, cache: Path | None = None) -> JavaAppBuild:
    """The cached build of ``project`` (default :func:`default_project_dir`), built if
    missing, under ``~/.cache/riverbed/kafka-connect``.  Raises :class:`ConnectError` when
    ``mvn``/``javac``/``java`` is missing or the build fails."""
    return build_java_app(project or default_project_dir(), "kafka-connect", cache, ConnectError)


def worker_properties(
    bootstrap: str,
    rest_port: int,
    group_id: str = "riverbed-connect",
    exactly_once: bool = False,
    overrides: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """``worker.properties`` of a distributed worker (see the module docstring)."""
    props = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "config.storage.topic": f"{group_id}-configs",
        "offset.storage.topic": f"{group_id}-offsets",
        "status.storage.topic": f"{group_id}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        "listeners": f"http://127.0.0.1:{rest_port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(rest_port),
        "offset.flush.interval.ms": "1000",
        "scheduled.rebalance.max.delay.ms": "0",
        "topic.creation.enable": "true",
        # every plugin on the class path has a ServiceLoader manifest: skip the ~5 s
        # reflective scan of every jar
        "plugin.discovery": "service_load",
    }
    if exactly_once:
        props["exactly.once.source.support"] = "enabled"
    props.update(overrides or {})
    return props


def debezium_postgres_config(
    source: PostgresSource, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A Debezium PostgreSQL connector's configuration for ``POST /connectors``:
    ``source``'s connector options (:meth:`PostgresSource.connector_properties`) with the
    initial snapshot, the topics created compacted with one partition (like
    ``riverbed cdc``'s), ``extra`` over them; every other option at Debezium's default."""
    config = {
        "tasks.max": "1",
        **source.connector_properties("initial"),
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.cleanup.policy": "compact",
    }
    config.update(extra or {})
    return config


class ConnectWorker(StartStopContext):
    """One distributed-mode Connect worker (a child JVM).  Use as a context manager."""

    def __init__(
        self,
        bootstrap: str,
        workdir: Path | None = None,
        group_id: str = "riverbed-connect",
        exactly_once: bool = False,
        overrides: Mapping[str, str] | None = None,
        heap: str = "512m",
    ) -> None:
        self.bootstrap = bootstrap
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="riverbed-connect-"))
        self.group_id = group_id
        self.exactly_once = exactly_once
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.rest_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def start(self, timeout_s: float = 180) -> ConnectWorker:
        """Start the JVM and return once its REST API answers ``GET /`` (a fresh port each
        start).  Raises :class:`ConnectError` with the log's tail when the JVM exits or the
        deadline passes first; the JVM is killed then."""
        build = ensure_connect()
        java = shutil.which("java") or "java"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.rest_port = free_port()
        props = worker_properties(
            self.bootstrap, self.rest_port, self.group_id, self.exactly_once, self.overrides
        )
        config = self.workdir / "worker.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j2.properties").write_text(_LOG4J2.format(dir=self.workdir))
        atexit.register(self.kill)
        with open(self.workdir / "stdout", "ab") as out:
            self.proc = subprocess.Popen(
                [
                    java,
                    f"-Xmx{self.heap}",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                    "-cp",
                    build.classpath,
                    MAIN_CLASS,
                    str(config),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            out.write(f"--- java pid {self.proc.pid}\n".encode())
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.tail()
                self.kill()
                raise ConnectError(f"Kafka Connect did not start:\n{tail}")
            with contextlib.suppress(ConnectError):
                self.rest("GET", "/")
                return self
            time.sleep(0.2)  # polling interval of a condition check

    def rest(self, method: str, path: str, body: Any = None, timeout_s: float = 30) -> Any:
        """One REST call; the decoded JSON answer (None when empty).  Raises
        :class:`ConnectError` on a connection error or an HTTP status >= 400 (its body in
        the message)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise ConnectError(
                f"{method} {path}: HTTP {exc.code}: {exc.read().decode(errors='replace')}"
            ) from exc
        except (OSError, urllib.error.URLError) as exc:
            raise ConnectError(f"{method} {path}: {exc}") from exc
        return json.loads(raw) if raw else None

    def create_connector(self, name: str, config: Mapping[str, str]) -> None:
        """``PUT /connectors/<name>/config`` (creates or updates).  Retried while the worker
        is still joining its group (HTTP 409 "rebalance in progress") for up to 60 s."""
        deadline = time.monotonic() + 60
        while True:
            try:
                self.rest("PUT", f"/connectors/{name}/config", dict(config))
                return
            except ConnectError as exc:
                if "409" not in str(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(0.5)  # polling interval of a condition check

    def status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/<name>/status``; ``{}`` when not known (yet)."""
        try:
            answer: dict[str, Any] = self.rest("GET", f"/connectors/{name}/status")
        except ConnectError:
            return {}
        return answer

    def running(self, name: str) -> bool:
        """The connector and all its tasks (at least one) are RUNNING on this worker (a
        one-worker cluster: a new worker process first reads its predecessor's last
        statuses back from the status topic).  Raises
        :class:`ConnectError` with the task's trace when a task FAILED, or when the JVM
        exited."""
        self.check_alive()
        status = self.status(name)
        tasks = status.get("tasks", [])
        for task in tasks:
            if task.get("state") == "FAILED":
                raise ConnectError(f"task of {name} failed: {task.get('trace', '')[:3000]}")
        # the status topic still holds a killed predecessor's RUNNING: only this worker's
        # own reports count
        me = f"127.0.0.1:{self.rest_port}"
        connector = status.get("connector", {})
        return (
            connector.get("state") == "RUNNING"
            and connector.get("worker_id") == me
            and bool(tasks)
            and all(
                task.get("state") == "RUNNING" and task.get("worker_id") == me for task in tasks
            )
        )

    def check_alive(self) -> None:
        """Raise :class:`ConnectError` with the log's tail if the JVM has exited."""
        if self.proc is None or self.proc.poll() is not None:
            raise ConnectError(f"Kafka Connect is not running:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return log_tail(self.workdir, ("stdout", "connect.log"), lines)

    def stop(self, timeout_s: float = 60) -> None:
        """SIGTERM (graceful: tasks stop, offsets are committed), SIGKILL of the JVM's
        process group after ``timeout_s``.  Idempotent."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            stop_process_group(self.proc, timeout_s)
        self._forget()

    def kill(self) -> None:
        """SIGKILL the JVM's process group at once (no offset commit).  Idempotent."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(30)
        self._forget()

    def _forget(self) -> None:
        with contextlib.suppress(Exception):
            atexit.unregister(self.kill)
