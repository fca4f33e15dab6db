"""Spark's own JVM Kafka connector (spark-sql-kafka-0-10), resolved from Maven Central once.

Cache: ``~/.cache/riverbed/spark-kafka-<version>/`` (or ``$RIVERBED_SPARK_KAFKA_CACHE``)
holding ``pom.xml``, ``libs/*.jar`` (``mvn dependency:copy-dependencies``) and
``libs.complete``, written last.  Only the connector's own jars go on ``spark.jars``
(the connector, the token provider, kafka-clients, commons-pool2): Scala, Hadoop and
compression libraries already ship in pyspark.

The connector version follows pyspark's; when Maven Central has no such release (pyspark
4.3.0 is not there as of this writing) the newest earlier 4.x is used, which the test then
proves compatible.  ``RIVERBED_SPARK_KAFKA_VERSION`` forces one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pyspark

from riverbed.file_lock import maven_repository_lock

FALLBACK_VERSIONS = ("4.2.0", "4.1.1", "4.0.0")
SPARK_JAR_PREFIXES = (
    "spark-sql-kafka-0-10",
    "spark-token-provider-kafka-0-10",
    "kafka-clients",
    "commons-pool2",
)
_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.riverbed</groupId><artifactId>spark-kafka</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies><dependency>
    <groupId>org.apache.spark</groupId><artifactId>spark-sql-kafka-0-10_2.13</artifactId>
    <version>{version}</version>
  </dependency></dependencies>
</project>
"""


def _cache(version: str) -> Path:
    root = os.environ.get("RIVERBED_SPARK_KAFKA_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "riverbed") / f"spark-kafka-{version}"


def _resolve(version: str) -> list[Path] | None:
    cache = _cache(version)
    libs, stamp = cache / "libs", cache / "libs.complete"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            mvn = shutil.which("mvn")
            if mvn is None:
                raise RuntimeError("mvn not found on PATH (Debian package: maven)")
            (cache / "pom.xml").write_text(_POM.format(version=version))
            shutil.rmtree(libs, ignore_errors=True)
            with maven_repository_lock():
                proc = subprocess.run(
                    [
                        mvn,
                        "-q",
                        "-B",
                        "-f",
                        str(cache / "pom.xml"),
                        "dependency:copy-dependencies",
                        f"-DoutputDirectory={libs}",
                        "-DincludeScope=runtime",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=900,
                    check=False,
                )
            if proc.returncode != 0:
                return None
            stamp.write_text(version + "\n")
    return sorted(p for p in libs.glob("*.jar") if p.name.startswith(SPARK_JAR_PREFIXES))


def connector_jars() -> tuple[str, list[Path]]:
    """``(version, jars)`` for ``spark.jars``; raises when no candidate resolves."""
    forced = os.environ.get("RIVERBED_SPARK_KAFKA_VERSION")
    candidates = [forced] if forced else [pyspark.__version__, *FALLBACK_VERSIONS]
    for version in candidates:
        jars = _resolve(version)
        if jars:
            return version, jars
    raise RuntimeError(f"spark-sql-kafka-0-10_2.13 not resolvable for any of {candidates}")
