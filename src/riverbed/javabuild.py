"""Java programs built once from a Maven project with plain ``javac``/``jar`` and cached: the
programs the tests run (Kafka Streams, Debezium, a share consumer) and the product's
``riverbed-jvm`` Spark reader (:mod:`riverbed.spark.jvm`).  Lives outside
:mod:`riverbed.testing` so product code can use it; :mod:`riverbed.testing.java_app`
re-exports it.

A project is a directory with ``pom.xml`` (its dependencies) and ``src/**/*.java``.
:func:`build_java_app` builds it into::

    ~/.cache/riverbed/<cache name>/<sha256 of pom.xml + sources, 16 hex>/
        libs/*.jar     mvn -q dependency:copy-dependencies (Maven Central, first time only)
        app.jar        javac --release 17 + jar (no Maven plugins beyond dependency:);
                       with ``resources=True`` also ``src/main/resources/**``
        complete       written last: its presence means the directory is whole
        .lock          flock(2) around the build, so concurrent sessions build once

A changed source gets a new directory; old ones are left for the user to delete.
Thread-safe and process-safe (the flock); a build interrupted hard is redone next time
(no ``complete`` file).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from riverbed.file_lock import exclusive_lock, maven_repository_lock

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


def _resources(project: Path) -> list[Path]:
    root = project / "src" / "main" / "resources"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def _digest(project: Path, resources: bool = False, extra: str = "") -> str:
    h = hashlib.sha256()
    for path in _sources(project) + (_resources(project) if resources else []):
        h.update(str(path.relative_to(project)).encode() + b"\0" + path.read_bytes() + b"\0")
    if extra:
        h.update(extra.encode())
    return h.hexdigest()[:16]


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
    *,
    compile_classpath: Sequence[str] = (),
    resources: bool = False,
    digest_extra: str = "",
) -> JavaAppBuild:
    """The cached build of ``project`` under ``cache`` (default
    ``~/.cache/riverbed/<cache_name>``), built if missing.  Raises ``error`` (a
    :class:`JavaAppError` unless the caller names its own) when a tool is missing or the
    build fails.

    ``compile_classpath``: more classpath entries for ``javac`` only (jars the program
    finds at run time elsewhere, e.g. Spark's); ``resources``: copy ``src/main/resources``
    into the jar; ``digest_extra``: mixed into the directory's hash (e.g. the version of
    the jars compiled against)."""
    for tool in ("mvn", "javac", "jar", "java"):
        if shutil.which(tool) is None:
            raise error(f"{tool} not found on PATH")
    base = cache or Path.home() / ".cache" / "riverbed" / cache_name
    digest = _digest(project, resources, digest_extra)
    root = base / digest
    if (root / "complete").exists():
        return JavaAppBuild(root)
    root.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(root / ".lock"):
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
        with maven_repository_lock():
            _run(copy, project, 900, "mvn dependency:copy-dependencies", error)
        sources = [str(p) for p in _sources(project) if p.suffix == ".java"]
        classes = str(root / "classes")
        classpath = os.pathsep.join([libs, *compile_classpath])
        javac = ["javac", "--release", "17", "-cp", classpath, "-d", classes, *sources]
        _run(javac, project, 300, "javac", error)
        if resources:
            base_dir = project / "src" / "main" / "resources"
            for path in _resources(project):
                target = Path(classes) / path.relative_to(base_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        _run(["jar", "cf", str(root / "app.jar"), "-C", classes, "."], root, 120, "jar", error)
        (root / "complete").write_text(digest + "\n")
    return JavaAppBuild(root)
