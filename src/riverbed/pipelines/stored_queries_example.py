"""The ``stored-queries`` example: search on a stream of documents with queries kept in a
compacted topic.

Contract (``riverbed pipeline run stored-queries``; docs/time-and-patterns.md):

* input topic ``stored-queries`` (compacted; the runner creates it so): key = query id
  (text), value = the query's JSON (:class:`riverbed.pipelines.stored_queries.StoredQuery`:
  ``{"text_field", "terms", "conditions"}``), a tombstone deletes the query;
* input topic ``documents``: any JSON objects (e.g. ``{"doc_id", "text", "level"}``);
* output topic ``query-matches``, key = query id, value JSON with exactly ``{"query_id",
  "event"}`` (``event``: the document's JSON as read), one record per (document,
  matching query).

Both inputs are read by one query, so within a micro-batch the query changes apply
first, then the documents are matched: adding or deleting a query takes effect without a
restart, for the documents of the micro-batch that reads the change and every later one
(a document produced after the change is read in that micro-batch or a later one).
Several changes of one query id apply in offset order (one key: one partition).  State:
the query set, copied into each of :data:`BUCKETS` groups (documents are spread over them
by a hash of their text, so matching runs in parallel), ``<checkpoint>/query-matches``.
No watermark: nothing waits, a match is emitted in the micro-batch that reads the
document.  An undecodable query is ignored (and deletes an earlier one of that id); a
document that is not a JSON object matches nothing.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from riverbed.pipelines.examples import ExampleOptions
from riverbed.pipelines.stored_queries import match_stored_queries
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "documents x stored queries (compacted topic, live adds/deletes) -> matches"
QUERIES_TOPIC = "stored-queries"
DOCUMENTS_TOPIC = "documents"
OUTPUT_TOPIC = "query-matches"
BUCKETS = 4


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [QUERIES_TOPIC, DOCUMENTS_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    # the queries topic is an input, listed here so the runner creates it compacted
    return {QUERIES_TOPIC: {"cleanup.policy": "compact"}, OUTPUT_TOPIC: {}}


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start ``query-matches`` (checkpoint ``<checkpoint>/query-matches``)."""
    records = read_topics(spark, options, [QUERIES_TOPIC, DOCUMENTS_TOPIC])
    queries = records.filter(F.col("topic") == QUERIES_TOPIC)
    documents = records.filter(F.col("topic") == DOCUMENTS_TOPIC)
    matches = match_stored_queries(queries, documents, buckets=BUCKETS, order_col="offset")
    return [write_topic(matches, options, OUTPUT_TOPIC, OUTPUT_TOPIC)]
