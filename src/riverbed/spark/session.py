"""SparkSessions whose Python workers can import riverbed, and the check that they can.

The ``riverbed`` data source runs its readers and writers in Spark's *Python workers*:
processes Spark starts with ``PYSPARK_PYTHON`` (read once, when the SparkContext starts;
default ``python3`` from PATH) or, under ``spark-submit``, ``spark.pyspark.python``.  When
that interpreter is not the one riverbed is installed in, a query fails deep inside a
worker traceback (``ModuleNotFoundError: No module named 'riverbed'``).

- :func:`check_workers` runs a one-row job (a Python UDF, so it works with classic Spark
  and Spark Connect) that imports riverbed on a worker, and raises
  :class:`SparkWorkerSetupError` at once, naming the workers' interpreter and the fix,
  when it cannot.  It costs one small job: ~3 s when it starts the first worker, ~0.3 s
  after.  :func:`riverbed.spark.register` calls it.
- :func:`local_session` builds a ``local[N]`` session that passes it: workers run
  ``sys.executable``, ``SPARK_LOCAL_IP``/driver host on loopback, few shuffle partitions
  (2 by default, instead of 200), no UI, UTC session time zone, the FileSystem-based
  streaming checkpoint manager (:data:`CHECKPOINT_FILE_MANAGER`); with ``jvm_reader=True``
  the ``riverbed-jvm`` format too (:mod:`riverbed.spark.jvm`, built on first use).

Both are called from the driver only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from riverbed.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


#: Streaming checkpoint manager that ``local_session`` sets by default.  pip's PySpark has
#: no native Hadoop library, so Spark's default (FileContext-based) manager sets file
#: permissions by forking ``chmod``/``readlink`` processes on every checkpoint write:
#: 0.2-0.37 s per micro-batch on a 2-core box (commit log 181 ms -> 44 ms with this one).
#: This one writes each offset/commit log entry to a temporary file and renames it into
#: place (``CheckpointFileManager.RenameBasedFSDataOutputStream``; refusing to overwrite
#: an existing batch file), so on a local file system an entry is still all-or-nothing
#: after a crash, as with the default.
CHECKPOINT_FILE_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)


class SparkWorkerSetupError(ConfigError):
    """Spark's Python workers cannot import riverbed (a setup mistake; the message says
    how to fix it)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    for marker in ("ModuleNotFoundError:", "ImportError:", "Cannot run program"):
        at = text.find(marker)
        if at >= 0:
            return text[at:].splitlines()[0].strip()
    return next((s.strip() for s in text.splitlines() if s.strip()), type(exc).__name__)


def _worker_python(spark: SparkSession) -> str:
    try:
        return str(spark.sparkContext.pythonExec)
    except Exception:  # Spark Connect has no SparkContext
        return os.environ.get("PYSPARK_PYTHON", "python3")


def check_workers(spark: SparkSession, module: str = "riverbed") -> str:
    """Import ``module`` on a Python worker of ``spark``; the worker's ``sys.executable``.

    Raises :class:`SparkWorkerSetupError` naming the fix when the import (or starting the
    worker) fails.
    """
    from pyspark.sql.functions import udf

    def probe() -> str:
        import importlib
        import sys as worker_sys

        importlib.import_module(module)
        return worker_sys.executable

    try:
        rows = spark.range(1).select(udf(probe, "string")().alias("python")).collect()
    except Exception as exc:
        workers = _worker_python(spark)
        raise SparkWorkerSetupError(
            f"Spark's Python workers cannot import {module} ({_first_line(exc)}); they run "
            f"{workers!r}, the driver runs {sys.executable!r}.  Fix: start the session with "
            f"PYSPARK_PYTHON={sys.executable} in the environment (or spark.pyspark.python "
            f"with spark-submit), or install riverbed for {workers!r}; "
            f"riverbed.spark.local_session() builds a local session that works."
        ) from exc
    return str(rows[0]["python"])


def local_session(
    app_name: str = "riverbed",
    *,
    cores: int = 2,
    shuffle_partitions: int = 2,
    config: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
    register: bool = True,
    jvm_reader: bool = False,
) -> SparkSession:
    """A ``local[cores]`` SparkSession whose workers run this interpreter, with the
    ``riverbed`` format registered (and the workers checked) unless ``register=False``.

    Sets ``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` to ``sys.executable`` and
    ``SPARK_LOCAL_IP`` to 127.0.0.1 (unless already set) in this process's environment,
    since Spark reads them when the context starts.  ``config`` entries win over the
    defaults here, e.g. ``spark.sql.streaming.checkpointFileManagerClass``, set to
    :data:`CHECKPOINT_FILE_MANAGER` by default (see there why).  Like ``getOrCreate``,
    returns the running session if there is one (its settings then stay as they are).

    ``jvm_reader=True`` puts the ``riverbed-jvm`` reader (built first if needed, see
    :func:`riverbed.spark.jvm.jvm_reader_classpath`; raises
    :class:`~riverbed.spark.jvm.JvmReaderBuildError` without mvn/javac) on the driver's and
    executors' ``extraClassPath``, ahead of any classpath given in ``config``.  The JVM
    reads it at start only: a session already running keeps its classpath.
    """
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.pyspark.python": sys.executable,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.sql.streaming.stopTimeout": "10s",
        "spark.python.worker.reuse": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER,
        **(config or {}),
    }
    if jvm_reader:
        from riverbed.spark.jvm import jvm_reader_classpath

        jars = jvm_reader_classpath()
        for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath"):
            settings[key] = os.pathsep.join(p for p in (jars, settings.get(key)) if p)
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    if register:
        from riverbed.spark import register as register_format

        register_format(session)
    return session
