"""The outbox event router: rows of an outbox table become events on per-aggregate topics,
with Debezium's outbox event router semantics (``io.debezium.transforms.outbox.EventRouter``).

An application writes its business row and an outbox row in one database transaction; the
connector captures the outbox table like any other, and this router turns each captured
*insert* into one event instead of a change envelope::

    outbox row (default columns)              event
    ───────────────────────────────────────   ─────────────────────────────────────────────
    id            uuid/text                   header  id = str(id)  (de-duplication key)
    aggregatetype text     "order"            topic   <topic_prefix>.order
    aggregateid   text     "o-17"             key     b"o-17"   (str of the value, UTF-8)
    type          text     "OrderCreated"     (only as an additional header when asked)
    payload       json/jsonb/text             value   the payload as is: a string (json and
                                                      jsonb columns are rendered as strings)
                                                      is sent as its UTF-8 bytes; any other
                                                      JSON value is serialised; NULL -> tombstone

The default topic is ``outbox.event.<aggregatetype>`` (Debezium's ``route.topic.replacement``
default ``outbox.event.${routedByValue}``).  ``additional_headers`` maps further columns to
header names (Debezium's ``table.fields.additional.placement`` with ``header``); header
values are the column value as text (JSON for non-strings).

Which changes route (as Debezium's router):

* ``c`` (insert) and ``r`` (snapshot read of a row still in the table) -> one event;
* ``d`` and its tombstone -> nothing (an application usually deletes its outbox rows right
  after inserting them, often in the same transaction: the insert was captured and routed);
* ``u`` -> nothing, logged once per table (outbox rows are immutable events);
* ``t`` (truncate) -> nothing.

The outbox table's own change topic is not written: routed events replace it.

**Delivery.**  Routed records are produced by the connector's
:class:`~riverbed.cdc.sink.ChangeSink` as part of the send that carried the change, so the
connector releases its source (slot LSN, change rows) only after the routed events were
acknowledged: a committed outbox row is never lost; after a connector crash an event not yet
acknowledged may be sent again, with the same ``id`` header, so consumers de-duplicate by it.
A rolled-back transaction never reaches the connector, so it emits nothing.

Not thread-safe; called from the connector's single polling thread.  Holds no state that a
crash could lose (only the set of topics already created).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from riverbed.cdc.envelope import topic_name
from riverbed.errors import CdcError

log = logging.getLogger(__name__)

DEFAULT_TOPIC_PREFIX = "outbox.event"

_ILLEGAL_TOPIC_CHARS = re.compile(r"[^a-zA-Z0-9._-]")  # as envelope.topic_name

Record = tuple[bytes | None, bytes | None]
Headers = list[tuple[str, str | bytes | None]]


@dataclass(frozen=True, slots=True)
class RoutedRecord:
    """One record the sink produces instead of the change records it was given."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers = field(default_factory=list)


class RecordRouter(Protocol):
    """A per-topic routing stage between a connector and its sink.

    :meth:`route` is given the ``(key, value)`` records of one change as the connector
    would produce them to ``topic``; it returns ``None`` to leave them as they are, or the
    records to produce instead (possibly none).  :meth:`topics` lists the topics a route
    may produce to that must exist (created by the sink, with :meth:`topic_config`)."""

    def route(self, topic: str, records: Sequence[Record]) -> list[RoutedRecord] | None: ...

    def topic_config(self) -> Mapping[str, str]: ...


@dataclass(frozen=True, slots=True)
class OutboxColumns:
    """Column names of the outbox table (Debezium's ``table.field.event.*`` defaults)."""

    id: str = "id"
    aggregate_type: str = "aggregatetype"
    aggregate_id: str = "aggregateid"
    type: str = "type"
    payload: str = "payload"


class OutboxRouter:
    """Routes the change records of one outbox table (its change topic ``source_topic``)
    to ``<topic_prefix>.<aggregatetype>``; every other topic passes through unchanged."""

    def __init__(
        self,
        source_topic: str,
        *,
        topic_prefix: str = DEFAULT_TOPIC_PREFIX,
        columns: OutboxColumns = OutboxColumns(),
        additional_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.source_topic = source_topic
        self.topic_prefix = topic_prefix
        self.columns = columns
        self.additional_headers = dict(additional_headers or {})
        self._warned_update = False

    @classmethod
    def for_table(
        cls,
        connector_prefix: str,
        schema: str,
        table: str,
        *,
        topic_prefix: str = DEFAULT_TOPIC_PREFIX,
        additional_headers: Mapping[str, str] | None = None,
    ) -> OutboxRouter:
        """The router of table ``schema.table`` captured under ``connector_prefix``."""
        return cls(
            topic_name(connector_prefix, schema, table),
            topic_prefix=topic_prefix,
            additional_headers=additional_headers,
        )

    def topic_config(self) -> Mapping[str, str]:
        """Event topics keep every event (the broker's default cleanup policy, delete)."""
        return {}

    def route(self, topic: str, records: Sequence[Record]) -> list[RoutedRecord] | None:
        if topic != self.source_topic:
            return None
        routed: list[RoutedRecord] = []
        for _key, value in records:
            if value is None:  # a delete's tombstone
                continue
            event = self._route_one(value)
            if event is not None:
                routed.append(event)
        return routed

    def _route_one(self, value: bytes) -> RoutedRecord | None:
        document = json.loads(value)
        if isinstance(document, dict) and "schema" in document and "payload" in document:
            document = document["payload"]  # schemas.enable
        op = document.get("op")
        if op == "u" and not self._warned_update:
            self._warned_update = True
            log.warning("an update of outbox table %s was ignored", self.source_topic)
        if op not in ("c", "r"):
            return None
        row: dict[str, Any] = document.get("after") or {}
        cols = self.columns
        for name in (cols.id, cols.aggregate_type, cols.aggregate_id, cols.payload):
            if name not in row:
                raise CdcError(
                    f"outbox table {self.source_topic} has no column {name!r} "
                    f"(expected {cols.id}, {cols.aggregate_type}, {cols.aggregate_id}, "
                    f"{cols.payload})"
                )
        aggregate_type = row[cols.aggregate_type]
        if aggregate_type is None or str(aggregate_type) == "":
            raise CdcError(f"an outbox row of {self.source_topic} has no {cols.aggregate_type}")
        headers: Headers = [(cols.id, _text(row[cols.id]))]
        for column, header in self.additional_headers.items():
            if column not in row:
                raise CdcError(f"outbox table {self.source_topic} has no column {column!r}")
            headers.append((header, _text(row[column])))
        aggregate_id = row[cols.aggregate_id]
        payload = row[cols.payload]
        return RoutedRecord(
            topic=f"{self.topic_prefix}.{_ILLEGAL_TOPIC_CHARS.sub('_', str(aggregate_type))}",
            key=None if aggregate_id is None else _text(aggregate_id),
            value=None if payload is None else _text(payload),
            headers=headers,
        )


def _text(value: Any) -> bytes:
    """A column value as bytes: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_header_option(specs: Sequence[str]) -> dict[str, str]:
    """``COLUMN[:HEADER]`` options (``--outbox-header``) -> ``{column: header}``."""
    out: dict[str, str] = {}
    for spec in specs:
        column, _, header = spec.partition(":")
        if not column:
            raise CdcError(f"--outbox-header {spec!r}: expected COLUMN or COLUMN:HEADER")
        out[column] = header or column
    return out


def router_for_table(
    connector_prefix: str,
    table: str,
    default_schema: str,
    *,
    topic_prefix: str = DEFAULT_TOPIC_PREFIX,
    header_specs: Sequence[str] = (),
) -> OutboxRouter:
    """The router for ``--outbox-table [SCHEMA.]TABLE`` (``default_schema`` when none:
    ``public`` for PostgreSQL, ``main`` for SQLite)."""
    schema, dot, name = table.rpartition(".")
    if not dot:
        schema = default_schema
    if not name:
        raise CdcError(f"--outbox-table {table!r}: expected [SCHEMA.]TABLE")
    return OutboxRouter.for_table(
        connector_prefix,
        schema,
        name,
        topic_prefix=topic_prefix,
        additional_headers=parse_header_option(header_specs),
    )


def with_outbox_table(tables: Sequence[str], table: str) -> tuple[str, ...]:
    """``tables`` plus the outbox ``table`` when an explicit list leaves it out (an empty
    list captures every table, the outbox included)."""
    if not tables or table in tables:
        return tuple(tables)
    return (*tables, table)
