"""A Kafka Streams application (word count, ``exactly_once_v2``) run unchanged against a broker.

The application is the Maven project ``tests/compat/kafka_streams/`` (``pom.xml``:
``org.apache.kafka:kafka-streams`` 4.4.0; one source file, ``WordCountApp.java``: lines
split into words, re-keyed by word through a repartition topic, counted in the persistent
store ``word-counts`` with its changelog, every new count written to the output topic as
``word -> big-endian long``).  :func:`ensure_app` builds it once and caches it::

    ~/.cache/riverbed/kafka-streams-app/<sha256 of pom.xml + sources, 16 hex>/
        libs/*.jar     mvn -q dependency:copy-dependencies (Maven Central, first time only)
        app.jar        javac --release 17 + jar (no Maven plugins beyond dependency:)
        complete       written last: its presence means the directory is whole
        .lock          flock(2) around the build, so concurrent sessions build once

A changed source gets a new directory; old ones are left for the user to delete.

:class:`StreamsApp` runs one instance as a child JVM (its own session, so SIGKILL takes
the whole JVM): the same application id, static-membership instance id and state
directory across restarts, so a restarted instance takes its tasks over at once and its
transactional producer fences the killed one's.  :func:`check_counts` is the oracle:
for exactly-once, the committed output per word never goes backwards, never exceeds the
true count, and ends at it.

Driven by one thread.  A test killed hard leaves the JVM orphaned (its log names it).
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from riverbed.testing.java_app import JavaAppBuild, JavaAppError, build_java_app

__all__ = [
    "AppBuild",
    "CountsVerdict",
    "StreamsApp",
    "StreamsAppError",
    "check_counts",
    "default_project_dir",
    "ensure_app",
    "true_counts",
]

MAIN_CLASS = "dev.riverbed.streams.WordCountApp"
WORD = re.compile(r"\W+")


class StreamsAppError(JavaAppError):
    """``mvn``/``javac``/``java`` missing, Maven Central unreachable, or the build failed."""


def default_project_dir() -> Path:
    """``tests/compat/kafka_streams`` of this checkout."""
    return Path(__file__).resolve().parents[3] / "tests" / "compat" / "kafka_streams"


AppBuild = JavaAppBuild


def ensure_app(project: Path | None = None, cache: Path | None = None) -> AppBuild:
    """The cached build of ``project`` (default :func:`default_project_dir`), built if
    missing (:func:`riverbed.testing.java_app.build_java_app`, under
    ``~/.cache/riverbed/kafka-streams-app``).  Raises :class:`StreamsAppError`
    when a tool is missing or the build fails."""
    return build_java_app(
        project or default_project_dir(), "kafka-streams-app", cache, StreamsAppError
    )


class StreamsApp:
    """One instance of the word count (a child JVM), restartable with the same identity."""

    def __init__(
        self,
        build: AppBuild,
        bootstrap: str,
        application_id: str,
        input_topic: str,
        output_topic: str,
        workdir: Path,
    ) -> None:
        self.build = build
        self.bootstrap = bootstrap
        self.application_id = application_id
        self.input_topic = input_topic
        self.output_topic = output_topic
        self.state_dir = workdir / "state"
        self.log_path = workdir / "streams.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._log_offset = 0

    def start(self) -> None:
        """Start the JVM (returns at once; see :meth:`wait_running`)."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"--- start #{self.starts}\n".encode())
            log.flush()
            self._log_offset = log.tell()
            self.proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    self.build.classpath,
                    MAIN_CLASS,
                    self.bootstrap,
                    self.application_id,
                    self.input_topic,
                    self.output_topic,
                    str(self.state_dir),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def wait_running(self, timeout_s: float) -> None:
        """Until this start printed ``RUNNING`` (its tasks assigned and restored)."""
        deadline = time.monotonic() + timeout_s
        while not self._printed("RUNNING"):
            if self.proc is None or self.proc.poll() is not None:
                raise AssertionError(f"the streams app exited:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the streams app is not RUNNING after {timeout_s}s:\n{self.tail()}"
                )
            time.sleep(0.1)

    def _printed(self, marker: str) -> bool:
        with open(self.log_path, "rb") as log:
            log.seek(self._log_offset)
            return marker.encode() in log.read()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the JVM (no close, no commit) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (a clean close), SIGKILL after ``timeout_s``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def true_counts(lines: Iterable[str]) -> Counter[str]:
    """What the application must count: lower-cased words split on non-word characters
    (Java's ``\\W+`` and Python's agree on ASCII input)."""
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(w for w in WORD.split(line.lower()) if w)
    return counts


@dataclass(frozen=True, slots=True)
class CountsVerdict:
    """What :func:`check_counts` found; ``ok`` when there is nothing to report."""

    missing: dict[str, int]
    """Words whose last committed count is below (or absent from) the true count."""
    problems: list[str]
    """Counts above the true count, counts going backwards, words never input."""

    @property
    def ok(self) -> bool:
        return not self.missing and not self.problems


def check_counts(
    seen: Mapping[str, Sequence[int]], expected: Mapping[str, int], *, final: bool = True
) -> CountsVerdict:
    """Compare the committed output (``word -> counts in offset order``) with ``expected``.

    Exactly-once means: every count is at most the true count and never below the one
    before it (a replayed, uncommitted update would show as a step back or an excess);
    ``final``: the last count of every word equals the true count."""
    problems: list[str] = []
    missing: dict[str, int] = {}
    for word, counts in seen.items():
        if word not in expected:
            problems.append(f"{word!r} was never input, counted {list(counts)[:5]}")
            continue
        for before, after in itertools.pairwise(counts):
            if after < before:
                problems.append(f"{word!r} went back from {before} to {after}")
                break
        if counts and max(counts) > expected[word]:
            problems.append(f"{word!r} reached {max(counts)} > true count {expected[word]}")
    if final:
        for word, n in expected.items():
            last = seen[word][-1] if seen.get(word) else 0
            if last != n:
                missing[word] = last
    return CountsVerdict(missing, problems)
