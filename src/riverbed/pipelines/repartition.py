"""Repartition through a topic: the two-stage pattern of the LinkedIn example.

Stage one writes each row keyed by ``key_col`` to an intermediate topic with the riverbed
sink (``deliveryGuarantee=exactly_once``: one transaction per micro-batch and task, so a
replayed micro-batch is not written twice for ``read_committed`` readers); the broker's
keyed partitioner puts all of one key's rows in one partition.  Stage two reads that
topic (:func:`read_repartitioned`) and aggregates per key, each key's rows in one
partition in stage one's order.

Record format: key = ``key_col`` as text, value = JSON of all the row's columns (null
fields kept).  Each stage is its own query with its own checkpoint; a crash of either
resumes from its checkpoint.  Driver-side only.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

from riverbed.pipelines.examples import ExampleOptions
from riverbed.pipelines.topic_streams import read_topics, write_topic


def repartition_through_topic(
    df: DataFrame, key_col: str, topic: str, options: ExampleOptions, query_name: str
) -> StreamingQuery:
    """Start stage one: ``df`` (a stream) to ``topic`` keyed by ``key_col``."""
    value = F.to_json(F.struct(*[F.col(c) for c in df.columns]), {"ignoreNullFields": "false"})
    records = df.select(F.col(key_col).cast("string").alias("key"), value.alias("value"))
    return write_topic(records, options, topic, query_name)


def read_repartitioned(
    spark: SparkSession, options: ExampleOptions, topic: str, schema: StructType
) -> DataFrame:
    """Stage two's input: the rows of ``topic`` parsed with ``schema`` plus the Kafka
    ``partition`` (malformed values give null columns)."""
    rows = read_topics(spark, options, [topic])
    parsed = F.from_json(F.col("value").cast("string"), schema).alias("v")
    return rows.select(parsed, F.col("partition")).select("v.*", "partition")
