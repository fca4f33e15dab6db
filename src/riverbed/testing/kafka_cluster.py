"""A three-node Apache Kafka 4.4 KRaft cluster on this machine, for the scale-out tests.

Riverbed's broker is one node; a user who outgrows it moves to a Kafka cluster.  This
harness runs the cluster that move lands on, so tests can run Riverbed's clients and
pipelines against it and kill a broker mid-run (:meth:`KafkaCluster.kill`,
:meth:`KafkaCluster.restart`).

Each node is a combined controller+broker JVM (``process.roles=broker,controller``, static
quorum of all nodes) on loopback ports picked free at start.  Jars come from
:func:`riverbed.testing.kafka_reference.resolve_jars` (Maven Central, cached in
``~/.cache/riverbed/kafka-<version>``).  Settings, and why:

- ``default.replication.factor`` = number of nodes (3), ``min.insync.replicas=2``: an
  ``acks=all`` write survives one dead broker; internal topics likewise.
- ``broker.session.timeout.ms=6000`` / ``broker.heartbeat.interval.ms=1000`` /
  ``replica.lag.time.max.ms=6000``: a killed broker is fenced and leaves the ISRs within
  seconds instead of Kafka's 9-30 s, so tests that kill one wait less.
- ``-Xmx384m`` and the serial GC: three JVMs share a 2-core machine with others.

Layout of the work dir (a temporary dir, removed by :meth:`stop` unless
``$RIVERBED_KEEP_KAFKA_DIR`` is set)::

    node-<id>/server.properties, log4j2.properties, data/, server.log, stdout

Thread-safety: drive one cluster from one thread.  Crash behaviour: every JVM is a child in
its own session; :meth:`stop` SIGKILLs them all (the tests need no clean shutdown), and an
``atexit`` hook does the same if the interpreter exits with the cluster still running.  A
test process killed with SIGKILL leaves the JVMs orphaned; ``ps`` shows their work dirs.
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from riverbed.errors import RiverbedError
from riverbed.testing.kafka_reference import _LOG4J2, _cluster_id, free_port, resolve_jars
from riverbed.testing.lifecycle import StartStopContext

CLUSTER_KAFKA_VERSION = "4.4.0"
_STARTED_MARKER = "Kafka Server started"


class KafkaClusterError(RiverbedError):
    """The cluster could not be formatted, started or restarted."""


@dataclass
class _Node:
    node_id: int
    port: int
    controller_port: int
    workdir: Path
    proc: subprocess.Popen[bytes] | None = None
    log_offset: int = 0  # server.log size when the JVM was last started


@dataclass
class KafkaCluster(StartStopContext):
    """``nodes`` Kafka broker+controller JVMs on 127.0.0.1.  Use as a context manager."""

    nodes: int = 3
    version: str = CLUSTER_KAFKA_VERSION
    heap: str = "384m"
    min_insync_replicas: int = 2
    overrides: Mapping[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 240.0
    workdir: Path | None = None
    cluster_id: str = ""
    _nodes: list[_Node] = field(default_factory=list, repr=False)
    _classpath: str = field(default="", repr=False)

    # -- addresses ---------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every node's PLAINTEXT address, comma-separated (clients need only one alive)."""
        return ",".join(f"127.0.0.1:{n.port}" for n in self._nodes)

    def address(self, node_id: int) -> str:
        return f"127.0.0.1:{self._node(node_id).port}"

    @property
    def node_ids(self) -> list[int]:
        return [n.node_id for n in self._nodes]

    def running(self, node_id: int) -> bool:
        proc = self._node(node_id).proc
        return proc is not None and proc.poll() is None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> KafkaCluster:
        """Format every node's storage, start all JVMs and wait until each serves requests."""
        self._classpath = str(resolve_jars(self.version) / "*")
        self.workdir = self.workdir or Path(tempfile.mkdtemp(prefix="riverbed-kafka-cluster-"))
        self.cluster_id = self.cluster_id or _cluster_id()
        self._nodes = [
            _Node(i, free_port(), free_port(), self.workdir / f"node-{i}")
            for i in range(1, self.nodes + 1)
        ]
        atexit.register(self.stop)
        try:
            for node in self._nodes:
                node.workdir.mkdir(parents=True, exist_ok=True)
                (node.workdir / "server.properties").write_text(self._properties(node))
                (node.workdir / "log4j2.properties").write_text(_LOG4J2.format(dir=node.workdir))
            self._format_all()
            for node in self._nodes:  # all at once: a KRaft quorum needs a majority up
                self._launch(node)
            deadline = time.monotonic() + self.startup_timeout_s
            for node in self._nodes:
                self._wait_ready(node, deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, node_id: int) -> None:
        """SIGKILL one node (broker and controller): no clean shutdown, as in a crash."""
        node = self._node(node_id)
        _kill(node.proc)
        node.proc = None

    def restart(self, node_id: int) -> None:
        """Start a killed node again on its old ports and data; wait until it serves."""
        node = self._node(node_id)
        if self.running(node_id):
            raise KafkaClusterError(f"node {node_id} is running")
        self._launch(node)
        self._wait_ready(node, time.monotonic() + self.startup_timeout_s)

    def stop(self) -> None:
        """SIGKILL every JVM and remove the work dir (idempotent)."""
        for node in self._nodes:
            _kill(node.proc)
            node.proc = None
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        if self.workdir is not None and not os.environ.get("RIVERBED_KEEP_KAFKA_DIR"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- observation -------------------------------------------------------------------

    def tail(self, node_id: int, lines: int = 30) -> str:
        """The last lines of one node's stdout and server.log, for error messages."""
        out = []
        for name in ("stdout", "server.log"):
            path = self._node(node_id).workdir / name
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- node {node_id} {name}\n" + "\n".join(text))
        return "\n".join(out)

    # -- internals ---------------------------------------------------------------------

    def _node(self, node_id: int) -> _Node:
        for node in self._nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(f"no node {node_id} (nodes: {self.node_ids})")

    def _properties(self, node: _Node) -> str:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self._nodes)
        rf = str(self.nodes)
        min_isr = str(min(self.min_insync_replicas, self.nodes))
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.workdir / "data"),
            "num.partitions": "2",
            "default.replication.factor": rf,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min_isr,
            "share.coordinator.state.topic.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "broker.session.timeout.ms": "6000",
            "broker.heartbeat.interval.ms": "1000",
            "replica.lag.time.max.ms": "6000",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.threads": "1",
        }
        props.update(self.overrides)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _java(self) -> str:
        java = shutil.which("java")
        if java is None:
            raise KafkaClusterError("java not found on PATH (Debian: openjdk-17-jre-headless)")
        return java

    def _format_all(self) -> None:
        """Format every node's storage, the JVMs side by side (each is a JVM start)."""
        procs = []
        for node in self._nodes:
            props = node.workdir / "server.properties"
            command = [
                *(self._java(), "-cp", self._classpath, "-Xmx192m", "-XX:+UseSerialGC"),
                "-XX:TieredStopAtLevel=1",
                *("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(props)),
            ]
            out = open(node.workdir / "format.out", "w+b")  # noqa: SIM115 -- closed below
            procs.append((node, out, subprocess.Popen(command, stdout=out, stderr=out)))
        failed = []
        try:
            for node, out, proc in procs:
                try:
                    code = proc.wait(180)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = proc.wait()
                if code != 0:
                    out.seek(0)
                    failed.append(f"node {node.node_id}:\n{out.read().decode(errors='replace')}")
        finally:
            for _, out, _ in procs:
                out.close()
        if failed:
            raise KafkaClusterError("storage format failed on " + "\n".join(failed))

    def _launch(self, node: _Node) -> None:
        log = node.workdir / "server.log"
        node.log_offset = log.stat().st_size if log.exists() else 0
        with open(node.workdir / "stdout", "ab") as stdout:
            node.proc = subprocess.Popen(
                [
                    self._java(),
                    "-cp",
                    self._classpath,
                    f"-Xmx{self.heap}",
                    "-Xms64m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-Djava.awt.headless=true",
                    f"-Dlog4j2.configurationFile={node.workdir / 'log4j2.properties'}",
                    "kafka.Kafka",
                    str(node.workdir / "server.properties"),
                ],
                stdout=stdout,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _wait_ready(self, node: _Node, deadline: float) -> None:
        import socket

        log = node.workdir / "server.log"
        while time.monotonic() < deadline:
            if node.proc is None or node.proc.poll() is not None:
                raise KafkaClusterError(
                    f"Kafka node {node.node_id} exited:\n{self.tail(node.node_id)}"
                )
            if log.exists():
                with open(log, "rb") as fh:
                    fh.seek(node.log_offset)
                    started = _STARTED_MARKER.encode() in fh.read()
                if started:
                    with (
                        contextlib.suppress(OSError),
                        socket.create_connection(("127.0.0.1", node.port), timeout=1.0),
                    ):
                        return
            time.sleep(0.1)
        raise KafkaClusterError(
            f"Kafka node {node.node_id} not ready in time:\n{self.tail(node.node_id)}"
        )


def _kill(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)
