"""``RiverbedDataSource``: the Python data source registered under the format name ``riverbed``.

One class serves both directions, as Spark's ``DataSource`` API wants: it only checks
options and hands out readers (the source, :mod:`riverbed.spark.reader`) and writers (the
sink, :mod:`riverbed.spark.sink`).  Options are checked when Spark asks for the schema
(``load()``), so a misspelt option, malformed offsets JSON or unreachable bootstrap
servers fail before any query starts, with a :class:`~riverbed.errors.ConfigError`
naming the problem.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from riverbed.errors import ConfigError
from riverbed.spark.offset_lookup import OffsetLookup
from riverbed.spark.options import parse_sink_options, parse_source_options
from riverbed.spark.reader import RiverbedBatchReader, RiverbedStreamReader
from riverbed.spark.schema import source_schema
from riverbed.spark.sink import RiverbedBatchWriter, RiverbedStreamWriter, check_sink_schema


class RiverbedDataSource(DataSource):
    """Kafka topics as a Spark source and sink, reached only through a Kafka client."""

    @classmethod
    def name(cls) -> str:
        return "riverbed"

    def schema(self) -> StructType:
        options = parse_source_options(self.options, streaming=None)
        lookup = OffsetLookup(options.kafka_config(), options.poll_timeout_ms)
        try:
            lookup.check_reachable()  # fail fast on unreachable servers
        finally:
            lookup.close()
        return source_schema(options.include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RiverbedBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RiverbedStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ConfigError("the riverbed sink only appends to topics: use mode('append')")
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return RiverbedBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options)
        return RiverbedStreamWriter(options)
