"""Debezium's PostgreSQL connector in its embedded engine, the reference for the
differential with ``riverbed cdc postgres`` (issue 11).

The capture program is the Maven project ``tests/compat/debezium/`` (``pom.xml``:
``io.debezium:debezium-embedded`` + ``debezium-connector-postgres`` 3.6.1.Final; one source
file, ``Capture.java``).  :func:`ensure_capture` builds it once and caches it::

    ~/.cache/riverbed/debezium-embedded/<sha256 of pom.xml + sources, 16 hex>/
        libs/*.jar     mvn -q dependency:copy-dependencies (Maven Central, first time only)
        app.jar        javac --release 17 + jar
        complete       written last: its presence means the directory is whole
        .lock          flock(2) around the build, so concurrent sessions build once

:class:`DebeziumCapture` runs it as a child JVM (its own session, so a kill takes the whole
JVM) with the configuration of :func:`engine_properties`: ``plugin.name=pgoutput``, its own
slot and publication, ``snapshot.mode=no_data``, an in-memory offset store, JsonConverter
with ``schemas.enable=false`` and ``decimal.handling.mode=string`` (docs/cdc.md's rendering;
every other option at Debezium's default).  Each change event becomes one line of
``out.jsonl``: ``{"topic": "<prefix>.<schema>.<table>", "key": <key JSON>, "value": <envelope
JSON or null for a tombstone>}``.

Driven by one thread.  A test killed hard leaves the JVM (and its slot) behind: the JVM's
pid is in the log's first line.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from riverbed.testing.java_app import JavaAppBuild, JavaAppError, build_java_app
from riverbed.testing.lifecycle import ClosingContext, stop_process_group

__all__ = [
    "DEBEZIUM_VERSION",
    "CaptureBuild",
    "DebeziumCapture",
    "DebeziumError",
    "PostgresSource",
    "default_project_dir",
    "engine_properties",
    "ensure_capture",
]

DEBEZIUM_VERSION = "3.6.1.Final"
MAIN_CLASS = "dev.riverbed.debezium.Capture"


class DebeziumError(JavaAppError):
    """``mvn``/``javac``/``java`` missing, Maven Central unreachable, the build failed, or
    the engine did not start."""


def default_project_dir() -> Path:
    """``tests/compat/debezium`` of this checkout."""
    return Path(__file__).resolve().parents[3] / "tests" / "compat" / "debezium"


CaptureBuild = JavaAppBuild


def ensure_capture(project: Path | None = None, cache: Path | None = None) -> CaptureBuild:
    """The cached build of ``project`` (default :func:`default_project_dir`), built if
    missing (:func:`riverbed.testing.java_app.build_java_app`, under
    ``~/.cache/riverbed/debezium-embedded``).  Raises :class:`DebeziumError`
    when a tool is missing or the build fails."""
    return build_java_app(
        project or default_project_dir(), "debezium-embedded", cache, DebeziumError
    )


@dataclass(frozen=True)
class PostgresSource:
    """Where and what a Debezium PostgreSQL connector captures: the server and database,
    the ``schema.table`` names in ``tables``, the ``topic_prefix`` of its topics, its own
    ``slot`` and ``publication`` (created ``FOR TABLE`` those tables).  Shared by the
    embedded engine (:func:`engine_properties`) and Kafka Connect
    (:func:`riverbed.testing.kafka_connect.debezium_postgres_config`)."""

    host: str
    port: int
    user: str
    password: str
    dbname: str
    tables: Sequence[str]
    topic_prefix: str
    slot: str
    publication: str

    def connector_properties(self, snapshot_mode: str) -> dict[str, str]:
        """The connector options every harness here shares: pgoutput, the slot and
        publication (``publication.autocreate.mode=filtered``),
        ``decimal.handling.mode=string`` (docs/cdc.md's rendering), the given
        ``snapshot.mode``; every other option at Debezium's default."""
        return {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": self.host,
            "database.port": str(self.port),
            "database.user": self.user,
            "database.password": self.password,
            "database.dbname": self.dbname,
            "topic.prefix": self.topic_prefix,
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "publication.name": self.publication,
            "publication.autocreate.mode": "filtered",
            "table.include.list": ",".join(self.tables),
            "snapshot.mode": snapshot_mode,
            "decimal.handling.mode": "string",
        }


def engine_properties(
    *,
    host: str,
    port: int,
    user: str,
    password: str,
    dbname: str,
    tables: Sequence[str],
    topic_prefix: str = "dbz",
    slot: str = "debezium",
    publication: str = "dbz_publication",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The engine's configuration: Debezium's defaults except what docs/cdc.md documents
    (``decimal.handling.mode=string``, ``schemas.enable=false``); no snapshot, the
    publication created ``FOR TABLE`` the ``schema.table`` names in ``tables``."""
    props = {
        "name": f"{topic_prefix}-engine",
        "offset.storage": "org.apache.kafka.connect.storage.MemoryOffsetBackingStore",
        "offset.flush.interval.ms": "1000",
        **PostgresSource(
            host, port, user, password, dbname, tables, topic_prefix, slot, publication
        ).connector_properties("no_data"),
        "converter.schemas.enable": "false",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
    }
    props.update(extra or {})
    return props


class DebeziumCapture(ClosingContext):
    """One embedded engine (a child JVM) appending events to ``workdir/out.jsonl``."""

    def __init__(
        self,
        build: CaptureBuild,
        properties: Mapping[str, str],
        workdir: Path,
        bootstrap: str | None = None,
    ) -> None:
        """``bootstrap``: send the events to that Kafka cluster instead (topic = the event's
        destination, acks=all, idempotent; each batch acknowledged before the next), as
        Debezium Server's Kafka sink does; ``out.jsonl`` then stays empty."""
        self.bootstrap = bootstrap
        self.build = build
        self.properties = dict(properties)
        self.workdir = workdir
        self.out_path = workdir / "out.jsonl"
        self.log_path = workdir / "debezium.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 120) -> None:
        """Start the JVM and return once the connector task has started (its slot exists,
        so every transaction committed from now on is captured).  Raises
        :class:`DebeziumError` (with the log's tail) when the JVM exits or the deadline
        passes first; the JVM is killed then."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        props_path = self.workdir / "engine.properties"
        props_path.write_text(
            "".join(f"{k}={v}\n" for k, v in self.properties.items()), encoding="utf-8"
        )
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx512m",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                    "-cp",
                    self.build.classpath,
                    MAIN_CLASS,
                    str(props_path),
                    str(self.out_path),
                    *([self.bootstrap] if self.bootstrap else []),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            log.write(f"--- java pid {self.proc.pid}\n".encode())
        started = Path(str(self.out_path) + ".started")
        deadline = time.monotonic() + timeout_s
        while not started.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise DebeziumError(f"Debezium did not start:\n{self.log_tail()}")
            time.sleep(0.1)  # polling interval of a condition check

    def events(self) -> list[tuple[str, Any, Any]]:
        """Every complete line written so far: (topic, key, value), JSON-decoded."""
        if not self.out_path.exists():
            return []
        out: list[tuple[str, Any, Any]] = []
        for line in self.out_path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.endswith("\n"):
                record = json.loads(line)
                out.append((record["topic"], record["key"], record["value"]))
        return out

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def close(self, timeout_s: float = 30) -> None:
        """SIGTERM (the engine stops and flushes), SIGKILL of the whole JVM group after
        ``timeout_s``.  Idempotent."""
        stop_process_group(self.proc, timeout_s)
