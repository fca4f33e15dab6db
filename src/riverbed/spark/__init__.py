"""Spark Structured Streaming on Kafka topics.

Only this package and :mod:`riverbed.pipelines` (pipelines built on it) import pyspark.

Public API::

    register(spark)                      check the workers import riverbed, then make
                                         format "riverbed" available in the session
    local_session(app_name)              a local[2] session whose workers run this Python
    check_workers(spark)                 just the check; SparkWorkerSetupError says the fix
    RiverbedDataSource                   the Python data source (source and sink)
    IdempotentSQLiteSink                 foreachBatch helper: each batch id written once

``spark.readStream.format("riverbed")`` / ``spark.read.format("riverbed")`` take Spark's
Kafka source options and produce its schema; ``writeStream``/``write`` produce to topics
(at-least-once).  Everything reaches the broker over the wire through confluent-kafka, so
it works against Riverbed or any Kafka cluster.  See docs/spark.md.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from riverbed.spark.data_source import RiverbedDataSource
from riverbed.spark.idempotent import IdempotentSQLiteSink
from riverbed.spark.session import SparkWorkerSetupError, check_workers, local_session


def register(spark: SparkSession, *, check: bool = True) -> None:
    """Register the ``riverbed`` format in ``spark`` (idempotent).

    First (unless ``check=False``) a one-row job checks that Spark's Python workers can
    import riverbed -- the data source runs there -- and raises
    :class:`SparkWorkerSetupError` naming the fix (``PYSPARK_PYTHON`` /
    ``spark.pyspark.python``) when they cannot, instead of a worker traceback at the
    first query.
    """
    if check:
        check_workers(spark)
    spark.dataSource.register(RiverbedDataSource)


__all__ = [
    "IdempotentSQLiteSink",
    "RiverbedDataSource",
    "SparkWorkerSetupError",
    "check_workers",
    "local_session",
    "register",
]
