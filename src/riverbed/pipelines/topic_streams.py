"""Reading an example's input topics and writing its output topic with the ``riverbed``
format (the sessions and fraud examples; docs/spark.md).

Sources start at ``earliest`` (an example processes its whole input on first run; later
runs continue from the checkpoint's offsets).  The sink writes with
``deliveryGuarantee=exactly_once`` (docs/spark.md): one Kafka transaction per micro-batch
and task with a batch marker, so a micro-batch replayed after a crash is not written
twice for ``read_committed`` readers (a ``read_uncommitted`` reader may also see the
aborted leftovers of a crashed attempt).

Called on the driver only.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from riverbed.pipelines.examples import ExampleOptions


def read_topics(
    spark: SparkSession,
    options: ExampleOptions,
    topics: list[str],
    *,
    read_committed: bool = False,
) -> DataFrame:
    """A stream of the Kafka rows of ``topics`` from their earliest offsets.

    ``read_committed``: read only committed transactional records (for a topic another
    example writes exactly-once, e.g. an intermediate topic); the default reads
    uncommitted, as Spark does.
    """
    reader = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", options.bootstrap_server)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
    )
    if read_committed:
        reader = reader.option("kafka.isolation.level", "read_committed")
    for key, value in options.extra_source_options:
        reader = reader.option(key, value)
    return reader.load()


def write_topic(
    records: DataFrame,
    options: ExampleOptions,
    topic: str,
    query_name: str,
    *,
    output_mode: str = "append",
    topic_column: bool = False,
) -> StreamingQuery:
    """Start writing ``records`` (``key``, ``value``) to ``topic`` as query ``query_name``,
    checkpointed under ``options.query_checkpoint(query_name)``; ``availableNow`` when
    ``options.available_now``.

    ``topic_column``: ``records`` carry a ``topic`` column naming each row's topic (e.g.
    an output and its side topic written in one transaction per micro-batch); ``topic``
    then only keys the exactly-once batch markers (``markerTopic``).

    The query is not given Spark's ``queryName``: Spark hands it to a Python sink as the
    option ``queryName``, which the riverbed sink refuses as unknown.
    """
    writer = (
        records.writeStream.format("riverbed")
        .outputMode(output_mode)
        .option("kafka.bootstrap.servers", options.bootstrap_server)
        .option("markerTopic" if topic_column else "topic", topic)
        .option("checkpointLocation", options.query_checkpoint(query_name))
        .option("deliveryGuarantee", "exactly_once")
    )
    for key, value in options.extra_sink_options:
        writer = writer.option(key, value)
    if options.available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()
