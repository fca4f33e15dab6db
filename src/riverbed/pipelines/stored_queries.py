"""Search on streams: stored queries matched against every event.

Queries live in a compacted topic: key = query id (text), value = the query's JSON, a
tombstone (null value) deletes it.  A query (:class:`StoredQuery`)::

    {"text_field": "text",               # the event field searched (default "text")
     "terms": ["disk", "full"],          # every term must occur (case-insensitive words)
     "conditions": [{"field": "level", "op": "=", "value": "error"}, ...]}

``op`` is one of ``= != < <= > >= in`` (``in``: the field's value is in the list
``value``); every condition must hold; a missing field fails every condition but ``!=``.
A query with neither terms nor conditions matches every event.  Words are runs of
letters and digits (``\\w+``), lower-cased.

On Spark (:func:`match_stored_queries`) the queries are *state*: the query rows and the
event rows of a micro-batch go to one ``applyInPandasWithState`` group per bucket (each
query row is copied to every bucket; events are spread by a hash of their text), whose
state is the current query set, checkpointed with the query.  Within a micro-batch query
changes apply first, then events are matched, so adding or deleting a query takes effect
without a restart, from the micro-batch that reads the change (the next micro-batch
after it is produced).  Output: one row per match, ``key`` = query id, ``value`` = JSON
``{"query_id": str, "event": <the event JSON>}``.  An undecodable query is ignored (and
deletes an earlier query of that id); an undecodable event matches nothing.

:class:`QueryIndex` holds the queries with an inverted index on each query's first term,
so an event is checked only against the queries one of its words selects, plus those
without terms.  Not thread-safe.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from riverbed.errors import ConfigError

WORD = re.compile(r"\w+")
OPS = ("=", "!=", "<", "<=", ">", ">=", "in")
OUTPUT_SCHEMA = "key string, value string"


def words(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text)}


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: str
    value: Any

    def holds(self, event: Mapping[str, Any]) -> bool:
        if self.field not in event:
            return self.op == "!="
        got = event[self.field]
        try:
            if self.op == "=":
                return bool(got == self.value)
            if self.op == "!=":
                return bool(got != self.value)
            if self.op == "in":
                return got in self.value
            if self.op == "<":
                return bool(got < self.value)
            if self.op == "<=":
                return bool(got <= self.value)
            if self.op == ">":
                return bool(got > self.value)
            return bool(got >= self.value)
        except TypeError:  # e.g. a string compared with a number
            return False


@dataclass(frozen=True, slots=True)
class StoredQuery:
    query_id: str
    terms: tuple[str, ...]
    conditions: tuple[Condition, ...]
    text_field: str = "text"

    @classmethod
    def parse(cls, query_id: str, text: str) -> StoredQuery:
        """A query from its JSON; :class:`ConfigError` if it is not one."""
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise ValueError("not an object")
            terms = tuple(w for t in raw.get("terms", []) for w in sorted(words(str(t))))
            conditions = tuple(
                Condition(str(c["field"]), str(c["op"]), c["value"])
                for c in raw.get("conditions", [])
            )
            text_field = str(raw.get("text_field", "text"))
        except (ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"query {query_id!r} is not a stored query: {e}") from e
        for condition in conditions:
            if condition.op not in OPS:
                raise ConfigError(f"query {query_id!r}: unknown op {condition.op!r}")
        return cls(query_id, terms, conditions, text_field)

    def matches(self, event: Mapping[str, Any], event_words: set[str] | None = None) -> bool:
        if self.terms:
            text = event.get(self.text_field)
            found = words(text) if event_words is None and isinstance(text, str) else event_words
            if found is None or not all(t in found for t in self.terms):
                return False
        return all(c.holds(event) for c in self.conditions)


class QueryIndex:
    """The current stored queries.  State format (:meth:`state`): JSON ``{query_id:
    query JSON text}``."""

    def __init__(self, state: Mapping[str, str] | None = None) -> None:
        self._texts: dict[str, str] = {}
        self._queries: dict[str, StoredQuery] = {}
        self._by_term: dict[str, set[str]] = {}
        self._no_terms: set[str] = set()
        for query_id, text in (state or {}).items():
            self.apply(query_id, text)

    def state(self) -> dict[str, str]:
        return dict(self._texts)

    def __len__(self) -> int:
        return len(self._queries)

    def apply(self, query_id: str, text: str | None) -> None:
        """Upsert (``text``) or delete (None) a query; an undecodable one deletes."""
        old = self._queries.pop(query_id, None)
        self._texts.pop(query_id, None)
        if old is not None:
            if old.terms:
                self._by_term[old.terms[0]].discard(query_id)
            else:
                self._no_terms.discard(query_id)
        if text is None:
            return
        try:
            query = StoredQuery.parse(query_id, text)
        except ConfigError:
            return
        self._queries[query_id] = query
        self._texts[query_id] = text
        if query.terms:
            self._by_term.setdefault(query.terms[0], set()).add(query_id)
        else:
            self._no_terms.add(query_id)

    def match(self, event: Mapping[str, Any]) -> list[str]:
        """The ids (sorted) of the queries ``event`` matches."""
        candidates = set(self._no_terms)
        found: dict[str, set[str]] = {}
        for field in {q.text_field for q in self._queries.values() if q.terms}:
            text = event.get(field)
            found[field] = words(text) if isinstance(text, str) else set()
            for word in found[field]:
                candidates |= self._by_term.get(word, set())
        return sorted(
            q
            for q in candidates
            if self._queries[q].matches(event, found.get(self._queries[q].text_field))
        )


class MatchFunction:
    """The ``applyInPandasWithState`` function (pickled to Spark's Python workers)."""

    def __call__(
        self, key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        index = QueryIndex(json.loads(state.get[0]) if state.exists else None)
        changes: list[tuple[int, str, str | None]] = []
        events: list[tuple[int, str]] = []
        for frame in frames:
            for kind, seq, qid, value in zip(
                frame["kind"], frame["seq"], frame["query_id"], frame["value"], strict=True
            ):
                text = None if value is None or value != value else str(value)
                if kind == "q":
                    changes.append((int(seq), str(qid), text))
                elif text is not None:
                    events.append((int(seq), text))
        for _, qid, text in sorted(changes, key=lambda c: c[0]):
            index.apply(qid, text)
        keys: list[str] = []
        values: list[str] = []
        for _, text in sorted(events):
            try:
                event = json.loads(text)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            for qid in index.match(event):
                keys.append(qid)
                values.append(f'{{"query_id":{json.dumps(qid)},"event":{text}}}')
        state.update((json.dumps(index.state()),))
        if keys:
            yield pd.DataFrame({"key": keys, "value": values})


def match_stored_queries(
    queries: DataFrame,
    events: DataFrame,
    *,
    buckets: int = 1,
    order_col: str | None = None,
) -> DataFrame:
    """Matches (``key`` = query id, ``value`` = JSON ``{query_id, event}``) of ``events``
    (column ``value``: event JSON) against ``queries`` (columns ``key``: query id,
    ``value``: query JSON or null).  ``order_col`` (e.g. the Kafka ``offset``, long)
    orders several changes of one query id within a micro-batch; without it their order
    there is unspecified.  Append mode.
    """
    if buckets < 1:
        raise ConfigError("buckets must be at least 1")
    order = F.col(order_col).cast("long") if order_col else F.lit(0).cast("long")
    query_rows = queries.select(
        F.explode(F.sequence(F.lit(0), F.lit(buckets - 1))).alias("bucket"),
        F.lit("q").alias("kind"),
        order.alias("seq"),
        F.col("key").cast("string").alias("query_id"),
        F.col("value").cast("string").alias("value"),
    )
    value = F.col("value").cast("string")
    event_rows = events.select(
        F.pmod(F.hash(value), F.lit(buckets)).alias("bucket"),
        F.lit("e").alias("kind"),
        order.alias("seq"),
        F.lit(None).cast("string").alias("query_id"),
        value.alias("value"),
    )
    return (
        query_rows.unionByName(event_rows)
        .groupBy("bucket")
        .applyInPandasWithState(
            MatchFunction(), OUTPUT_SCHEMA, "state string", "append", GroupStateTimeout.NoTimeout
        )
    )
