"""Small Java programs the tests run (Kafka Streams, Debezium, a share consumer): built once
from a Maven project with plain ``javac``/``jar`` and cached.

A project is a directory with ``pom.xml`` (its dependencies) and ``src/**/*.java``.
:func:`build_java_app` builds it into::

    ~/.cache/riverbed/<cache name>/<sha256 of pom.xml + sources, 16 hex>/
        libs/*.jar     mvn -q dependency:copy-dependencies (Maven Central, first time only)
        app.jar        javac --release 17 + jar (no Maven plugins beyond dependency:)
        complete       written last: its presence means the directory is whole
        .lock          flock(2) around the build, so concurrent sessions build once

A changed source gets a new directory; old ones are left for the user to delete.
Thread-safe and process-safe (the flock); a build interrupted hard is redone next time
(no ``complete`` file).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JavaAppBuild", "JavaAppError", "build_java_app"]


class JavaAppError(RuntimeError):
    """``mvn``/``javac``/``java`` missing, Maven Central unreachable, or the build failed."""


@dataclass(frozen=True, slots=True)
class JavaAppBuild:
    """A built program: its jar and the directory of its dependencies."""

    root: Path

    @property
    def classpath(self) -> str:
        return f"{self.root / 'app.jar'}{os.pathsep}{self.root / 'libs'}/*"


def _sources(project: Path) -> list[Path]:
    return [project / "pom.xml", *sorted((project / "src").rglob("*.java"))]


def _digest(project: Path) -> str:
    h = hashlib.sha256()
    for path in _sources(project):
        h.update(str(path.relative_to(project)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(
    args: Sequence[str], cwd: Path, timeout_s: float, what: str, error: type[Exception]
) -> None:
    try:
        done = subprocess.run(
            list(args), cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise error(f"{what}: {exc}") from exc
    if done.returncode != 0:
        raise error(
            f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )


def build_java_app(
    project: Path,
    cache_name: str,
    cache: Path | None = None,
    error: type[Exception] = JavaAppError,
) -> JavaAppBuild:
    """The cached build of ``project`` under ``cache`` (default
    ``~/.cache/riverbed/<cache_name>``), built if missing.  Raises ``error`` (a
    :class:`JavaAppError` unless the caller names its own) when a tool is missing or the
    build fails."""
    for tool in ("mvn", "javac", "jar", "java"):
        if shutil.which(tool) is None:
            raise error(f"{tool} not found on PATH")
    base = cache or Path.home() / ".cache" / "riverbed" / cache_name
    root = base / _digest(project)
    if (root / "complete").exists():
        return JavaAppBuild(root)
    root.mkdir(parents=True, exist_ok=True)
    with _flock(root / ".lock"):
        if (root / "complete").exists():
            return JavaAppBuild(root)
        for stale in ("libs", "classes", "app.jar"):
            target = root / stale
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        libs = f"{root / 'libs'}/*"
        copy = [
            "mvn",
            "-q",
            "-B",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={root / 'libs'}",
            "-DincludeScope=runtime",
        ]
        _run(copy, project, 900, "mvn dependency:copy-dependencies", error)
        sources = [str(p) for p in _sources(project) if p.suffix == ".java"]
        classes = str(root / "classes")
        javac = ["javac", "--release", "17", "-cp", libs, "-d", classes, *sources]
        _run(javac, project, 300, "javac", error)
        _run(["jar", "cf", str(root / "app.jar"), "-C", classes, "."], root, 120, "jar", error)
        (root / "complete").write_text(_digest(project) + "\n")
    return JavaAppBuild(root)
