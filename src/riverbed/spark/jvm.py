"""The ``riverbed-jvm`` Spark format: a DataSource V2 reader and sink in Java, built on demand.

``spark.read.format("riverbed-jvm")`` reads the rows of ``format("riverbed")`` (same
schema, same batch options and errors, see :mod:`riverbed.spark.options`) through the
Apache Kafka Java consumer inside Spark's JVM: no Python worker per task, columnar
batches filled straight from the fetched records.  ``readStream`` reads micro-batches
(offsets as Spark's Kafka source's JSON); ``writeStream`` and ``write.mode("append")``
write through the Kafka Java producer, at-least-once (docs/spark.md, "The JVM reader").
The Python ``riverbed`` format stays the default.

The sources ship in this package (``riverbed/spark/java``: ``pom.xml`` naming
kafka-clients, ``src/main/java``).  :func:`jvm_reader_classpath` builds them once with
``mvn dependency:copy-dependencies`` (kafka-clients only; Maven Central the first time)
and ``javac --release 17`` against the installed pyspark's jars, into::

    ~/.cache/riverbed/spark-jvm/<sha256 of sources + pyspark version, 16 hex>/
        app.jar  libs/kafka-clients-*.jar  complete  .lock

(flock'd, so concurrent processes build once; see :mod:`riverbed.javabuild`), and returns
the classpath for ``spark.driver.extraClassPath`` / ``spark.executor.extraClassPath``
(local mode) or, comma-separated, ``spark.jars``.
:func:`riverbed.spark.session.local_session` with ``jvm_reader=True`` does this.

Needs ``mvn`` and a JDK 17+ (``javac``, ``jar``) only to build; without them
:func:`jvm_reader_classpath` raises :class:`JvmReaderBuildError` (one line naming what
to install) and the Python source keeps working.
"""

from __future__ import annotations

from pathlib import Path

from riverbed.errors import RiverbedError
from riverbed.javabuild import JavaAppError, build_java_app

PROJECT = Path(__file__).with_name("java")
FORMAT = "riverbed-jvm"


class JvmReaderBuildError(RiverbedError):
    """The ``riverbed-jvm`` reader could not be built (a tool is missing, Maven Central is
    unreachable on the first build, or javac failed)."""


def _pyspark_jars() -> tuple[Path, str]:
    try:
        import pyspark
    except ImportError:
        raise JvmReaderBuildError(
            "the riverbed-jvm reader compiles against pyspark's jars: pip install pyspark"
        ) from None
    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise JvmReaderBuildError(f"pyspark has no jars directory at {jars}")
    return jars, str(pyspark.__version__)


def jvm_reader_jars(cache: Path | None = None) -> list[Path]:
    """The jars of the built reader (built first if needed): ``app.jar`` and kafka-clients."""
    jars, version = _pyspark_jars()
    try:
        build = build_java_app(
            PROJECT,
            "spark-jvm",
            cache,
            JvmReaderBuildError,
            compile_classpath=[f"{jars}/*"],
            resources=True,
            digest_extra=f"pyspark {version}",
        )
    except JvmReaderBuildError as exc:
        text = str(exc)
        if "not found on PATH" in text:
            raise JvmReaderBuildError(
                f"cannot build the riverbed-jvm Spark reader: {text} (install Maven and a "
                "JDK 17+, e.g. apt-get install maven openjdk-17-jdk-headless; "
                'format("riverbed") needs neither)'
            ) from None
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        lines = lines or [type(exc).__name__]
        detail = next((line for line in lines[1:] if "error" in line.lower()), "")
        first = f"{lines[0]} {detail}".strip()
        raise JvmReaderBuildError(f"cannot build the riverbed-jvm Spark reader: {first}") from exc
    except JavaAppError as exc:  # pragma: no cover - build_java_app raises the given class
        raise JvmReaderBuildError(str(exc).splitlines()[0]) from exc
    return [build.root / "app.jar", *sorted((build.root / "libs").glob("*.jar"))]


def jvm_reader_classpath(cache: Path | None = None) -> str:
    """The reader's classpath (``:``-separated), for ``spark.driver.extraClassPath`` and
    ``spark.executor.extraClassPath``; builds it first if needed."""
    import os

    return os.pathsep.join(str(p) for p in jvm_reader_jars(cache))


def main() -> int:
    """``python -m riverbed.spark.jvm``: build the reader (if needed), print its classpath."""
    import sys

    try:
        print(jvm_reader_classpath())
    except RiverbedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
