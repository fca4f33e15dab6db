"""The row shape of the ``riverbed`` format: Spark's Kafka source schema, column for column.

=============  ==================================  ==========================================
column         Spark type                          meaning
=============  ==================================  ==========================================
key            binary (nullable)                   record key
value          binary (nullable)                   record value (null for a tombstone)
topic          string                              topic name
partition      int                                 partition number
offset         long                                record offset
timestamp      timestamp                           record timestamp (epoch ms, shown in UTC)
timestampType  int                                 0 CreateTime, 1 LogAppendTime, -1 none
headers        array<struct<key:string,            only with includeHeaders=true; null when
               value:binary>> (nullable)           the record has no headers
=============  ==================================  ==========================================

The Arrow schema is what the reader's ``pyarrow.RecordBatch`` es carry; Spark converts it
without a per-row Python step.
"""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def source_schema(include_headers: bool) -> StructType:
    """The Spark schema of rows read from a topic."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


ARROW_HEADERS_TYPE = pa.list_(
    pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema matching :func:`source_schema`."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", ARROW_HEADERS_TYPE))
    return pa.schema(fields)
