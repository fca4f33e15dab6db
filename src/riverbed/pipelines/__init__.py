"""Example pipelines built on :mod:`riverbed.spark`: what a Riverbed user writes.

:mod:`riverbed.pipelines.pageviews` (page views per user per hour: windows, watermark,
stragglers, exactly-once table; ``python -m riverbed.pipelines.pageviews``) and its state,
:mod:`riverbed.pipelines.pageviews_store` (one SQLite file).  ``riverbed demo`` runs it
(:mod:`riverbed.demo`); docs/pipeline.md walks through it.

Only :mod:`riverbed.spark` and this package import pyspark.  Importing this package alone
does not; its modules do.  Pipelines reach brokers only through the ``riverbed`` Spark
format and confluent-kafka, so they run unchanged against any Kafka cluster.
"""
