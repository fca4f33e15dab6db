"""Spark Structured Streaming on Kafka topics.

Only this package and :mod:`riverbed.pipelines` (pipelines built on it) import pyspark.

Public API::

    register(spark)                      make format "riverbed" available in a session
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


def register(spark: SparkSession) -> None:
    """Register the ``riverbed`` format in ``spark`` (idempotent)."""
    spark.dataSource.register(RiverbedDataSource)


__all__ = ["IdempotentSQLiteSink", "RiverbedDataSource", "register"]
