"""What the join examples share: reading their input topics, writing their output topic,
and JSON in and out without changing a field's JSON type.

JSON fields are read through Spark 4's VARIANT (``try_parse_json``): :func:`raw_field` is a
field's own JSON text (``17``, ``"17"``, ``null``; SQL NULL when the field is missing), so
an id that arrives as a JSON number leaves as a number and a string as a string;
:func:`text_field` is its value as plain text (``17`` for both), used as the join key and
the record key.  A value that is not a JSON object parses to NULL and is dropped by the
examples.  :func:`json_object` writes ``{"name": <raw>, ...}`` in the given field order,
every field present (``null`` for SQL NULL).

Queries read from the earliest offset (a fresh checkpoint starts at the topic's
beginning: "the log is the database") with ``failOnDataLoss=false`` (CDC topics are
compacted), and write with the ``riverbed`` sink in its exactly-once mode
(``deliveryGuarantee=exactly_once``: one Kafka transaction per micro-batch and sink task,
with a batch marker, so a batch replayed after a crash is not written twice; see
docs/spark.md).  Readers of the outputs should use ``isolation.level=read_committed``
(librdkafka's default) to skip the aborted attempts of a crashed run.
``--sink-option deliveryGuarantee=at_least_once`` switches back.  Used on the driver only.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from riverbed.pipelines.examples import ExampleOptions

TRIGGER_INTERVAL = "1 second"
DELIVERY_GUARANTEE = "exactly_once"


def read_topics(spark: SparkSession, options: ExampleOptions, topics: Sequence[str]) -> DataFrame:
    """A stream of the records of ``topics`` (Spark's Kafka schema), from the beginning."""
    reader = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", options.bootstrap_server)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "false")
    )
    for key, value in options.extra_source_options:
        reader = reader.option(key, value)
    return reader.load()


def write_topic(
    records: DataFrame, options: ExampleOptions, topic: str, query_name: str
) -> StreamingQuery:
    """Start writing ``records`` (``key``, ``value`` columns) to ``topic``, checkpointing
    under ``options.query_checkpoint(query_name)``; ``availableNow`` when asked.

    The query is not given a Spark query name: Spark passes it to the sink as an option.
    """
    writer = (
        records.writeStream.format("riverbed")
        .outputMode("append")
        .option("kafka.bootstrap.servers", options.bootstrap_server)
        .option("topic", topic)
        .option("checkpointLocation", options.query_checkpoint(query_name))
        .option("deliveryGuarantee", DELIVERY_GUARANTEE)
    )
    for key, value in options.extra_sink_options:
        writer = writer.option(key, value)
    if options.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=TRIGGER_INTERVAL)
    return writer.start()


def parsed_value(records: DataFrame) -> Column:
    """The record value as a VARIANT (NULL for a tombstone or text that is not JSON)."""
    return F.try_parse_json(records["value"].cast("string"))


def raw_field(variant: Column, path: str) -> Column:
    """The JSON text of the field at ``path`` (``$.a.b``); SQL NULL when it is missing."""
    return F.to_json(F.variant_get(variant, path, "variant"))


def text_field(variant: Column, path: str) -> Column:
    """The field at ``path`` as plain text (a string's characters, a number's digits)."""
    return F.try_variant_get(variant, path, "string")


def long_field(variant: Column, path: str) -> Column:
    """The field at ``path`` as a long (NULL when missing or not a number)."""
    return F.try_variant_get(variant, path, "long")


def json_object(fields: Sequence[tuple[str, Column]]) -> Column:
    """``{"a": <raw JSON of column a>, ...}`` as text; SQL NULL columns become ``null``.

    The names are written as given (they must not need JSON escaping); the columns must
    hold JSON text (see :func:`raw_field`) or be numbers/booleans, which are cast.
    """
    parts: list[Column] = []
    for i, (name, column) in enumerate(fields):
        parts.append(F.lit(("{" if i == 0 else ",") + f'"{name}":'))
        parts.append(F.coalesce(column.cast("string"), F.lit("null")))
    parts.append(F.lit("}"))
    return F.concat(*parts)
