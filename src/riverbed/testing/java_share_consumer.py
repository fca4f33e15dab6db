"""Kafka's Java ``KafkaShareConsumer`` (KIP-932) run as a share group member against a broker.

The program is the Maven project ``tests/compat/java_share_consumer/`` (``pom.xml``:
``org.apache.kafka:kafka-clients`` 4.4.0; one source file, ``ShareConsumerApp.java``).
It subscribes with ``share.acknowledgement.mode=explicit`` and, per record, ACCEPTs,
RELEASEs or REJECTs by a rule given on the command line: a value ending in
``reject_suffix`` is REJECTed, one ending in ``release_suffix`` is RELEASEd on its first
delivery (ACCEPTed on later ones), any other is ACCEPTed; it commits the acknowledgements
after each poll and prints one JSON line per delivery
(``{partition, offset, value, delivery_count, action}``) to stdout.  It exits after
``idle_polls`` empty polls (500 ms each) in a row once it has seen a record, or after
``max_seconds``.

:func:`ensure_app` builds it once and caches it, as
:mod:`riverbed.testing.kafka_streams_app` does::

    ~/.cache/riverbed/java-share-consumer/<sha256 of pom.xml + sources, 16 hex>/
        libs/*.jar     mvn -q dependency:copy-dependencies (Maven Central, first time only)
        app.jar        javac --release 17 + jar
        complete       written last: its presence means the directory is whole
        .lock          flock(2) around the build, so concurrent sessions build once

:class:`JavaShareConsumer` runs one member as a child JVM in its own session (SIGKILL
takes the whole JVM); stdout (the JSON lines) and stderr (the client's log) go to files
in ``workdir``.  Driven by one thread; a test killed hard leaves the JVM orphaned.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from riverbed.testing.java_app import JavaAppBuild, JavaAppError, build_java_app

__all__ = [
    "AppBuild",
    "Delivery",
    "JavaShareConsumer",
    "JavaShareConsumerError",
    "default_project_dir",
    "ensure_app",
]

MAIN_CLASS = "dev.riverbed.share.ShareConsumerApp"


class JavaShareConsumerError(JavaAppError):
    """``mvn``/``javac``/``java`` missing, Maven Central unreachable, or the build failed."""


def default_project_dir() -> Path:
    """``tests/compat/java_share_consumer`` of this checkout."""
    return Path(__file__).resolve().parents[3] / "tests" / "compat" / "java_share_consumer"


AppBuild = JavaAppBuild


@dataclass(frozen=True, slots=True)
class Delivery:
    """One record delivered to a member, and what the member did with it."""

    partition: int
    offset: int
    value: str
    delivery_count: int
    action: str
    """``ACCEPT``, ``RELEASE`` or ``REJECT``."""
    consumer: str = ""


def ensure_app(project: Path | None = None, cache: Path | None = None) -> AppBuild:
    """The cached build of ``project`` (default :func:`default_project_dir`), built if
    missing (:func:`riverbed.testing.java_app.build_java_app`, under
    ``~/.cache/riverbed/java-share-consumer``).  Raises :class:`JavaShareConsumerError`
    when a tool is missing or the build fails."""
    return build_java_app(
        project or default_project_dir(), "java-share-consumer", cache, JavaShareConsumerError
    )


class JavaShareConsumer:
    """One share group member (a child JVM) acknowledging by the suffix rule."""

    def __init__(
        self,
        build: AppBuild,
        bootstrap: str,
        group: str,
        topic: str,
        workdir: Path,
        name: str = "java",
        *,
        idle_polls: int = 10,
        max_seconds: int = 120,
        release_suffix: str = "r",
        reject_suffix: str = "x",
        poll_pause_ms: int = 0,
    ) -> None:
        self.build = build
        self.name = name
        self.args = [
            bootstrap,
            group,
            topic,
            str(idle_polls),
            str(max_seconds),
            release_suffix,
            reject_suffix,
            str(poll_pause_ms),
        ]
        workdir.mkdir(parents=True, exist_ok=True)
        self.out_path = workdir / f"{name}.out"
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the JVM (returns at once)."""
        assert self.proc is None, "already started"
        with open(self.out_path, "wb") as out, open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx192m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    self.build.classpath,
                    MAIN_CLASS,
                    *self.args,
                ],
                stdout=out,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _lines(self) -> list[dict[str, Any]]:
        if not self.out_path.exists():
            return []
        out = []
        for line in self.out_path.read_text(errors="replace").splitlines():
            # a line still being written is incomplete: only whole lines are parsed
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out

    def deliveries(self) -> list[Delivery]:
        """The deliveries printed so far."""
        return [
            Delivery(
                d["partition"], d["offset"], d["value"], d["delivery_count"], d["action"], self.name
            )
            for d in self._lines()
            if "offset" in d
        ]

    def subscribed(self) -> bool:
        return any(d.get("event") == "subscribed" for d in self._lines())

    def finished(self) -> bool:
        """The JVM exited (its last line is ``closed`` when it closed cleanly)."""
        return self.proc is not None and self.proc.poll() is not None

    def closed_cleanly(self) -> bool:
        return self.finished() and any(d.get("event") == "closed" for d in self._lines())

    def kill(self) -> None:
        """SIGKILL the JVM and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def tail(self, lines: int = 40) -> str:
        parts = []
        for path in (self.out_path, self.log_path):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)
