"""Debezium's change event, as JSON: the key and value every connector produces.

This is the wire contract of ``riverbed cdc`` (docs/cdc.md); outside checks read it.

**Key** — a JSON object of the primary-key columns, in key order::

    {"id": 7}

**Value** — Debezium's envelope without the schema part (``schemas.enable=false``)::

    {"before": {...} | null, "after": {...} | null,
     "source": {"version", "connector", "name", "ts_ms", "snapshot", "db",
                "sequence", "schema", "table", ...connector-specific fields},
     "op": "r" | "c" | "u" | "d" | "t", "ts_ms": <when the connector processed it>}

``op``: ``r`` a snapshot read (``before`` null), ``c`` an insert (``before`` null), ``u`` an
update (both images), ``d`` a delete (``after`` null), ``t`` a truncate (both null, no key).
A delete is followed by a **tombstone**: the same key with a null value, so that compaction
may forget the key.  An update that changes the primary key becomes, as in Debezium, a ``d``
on the old key, its tombstone, then a ``c`` on the new key (see :func:`records_for`).

``source.ts_ms`` is when the change happened in the database; the envelope's ``ts_ms`` is
when the connector processed it.  ``source.snapshot`` is a string as in Debezium:
``"true"`` / ``"first"`` / ``"last"`` during a snapshot, ``"false"`` when streaming.

With ``schemas_enable=True`` key and value are wrapped as Kafka Connect's JsonConverter
does: ``{"schema": {...}, "payload": {...}}``; the schema is built from :class:`Field`
lists that the connector supplies (Connect types ``int8/16/32/64``, ``float32/64``,
``boolean``, ``string``, ``bytes``, ``struct``, ``array``, ``map``, with an optional
logical ``name``, e.g. ``io.debezium.time.MicroTimestamp``).

Values inside ``before``/``after`` must already be JSON-ready (connectors render their
types: bytes as base64 strings, Debezium's default ``binary.handling.mode=bytes``).  This
module does no I/O and is pure: safe from any thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from riverbed import __version__

Op = Literal["r", "c", "u", "d", "t"]
"""Debezium's operation codes."""

OPS: frozenset[str] = frozenset({"r", "c", "u", "d", "t"})

Row = Mapping[str, Any]
"""A row image: column name -> JSON-ready value (``None`` for SQL NULL)."""

SOURCE_VERSION = f"riverbed-{__version__}"
"""``source.version``: which connector build produced the event."""


@dataclass(frozen=True, slots=True)
class Field:
    """One column's Kafka Connect schema, for ``schemas.enable`` output.

    ``type`` is a Connect type name (``"int64"``, ``"string"``, ``"bytes"``, ...);
    ``name`` an optional logical type (``"io.debezium.data.Json"``); ``parameters`` the
    logical type's parameters (e.g. ``{"scale": "2"}``); ``items`` an array's element.
    """

    field: str
    type: str
    optional: bool = True
    name: str | None = None
    parameters: Mapping[str, str] | None = None
    items: Field | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"type": self.type, "optional": self.optional}
        if self.name is not None:
            doc["name"] = self.name
        if self.parameters:
            doc["parameters"] = dict(self.parameters)
        if self.items is not None:
            doc["items"] = self.items.to_json()
        doc["field"] = self.field
        return doc


@dataclass(frozen=True, slots=True)
class Source:
    """The ``source`` block: where and when a change happened.

    ``connector`` is ``"postgresql"`` or ``"sqlite"``; ``name`` the topic prefix (Debezium's
    ``topic.prefix``); ``db`` the database; ``schema``/``table`` the captured table.
    ``extra`` holds the connector-specific fields, appended after the common ones in their
    order (PostgreSQL: ``txId``, ``lsn``, ``xmin``; SQLite: ``seq``).  ``sequence`` is
    Debezium's optional JSON-array-as-string position (``None`` when unused).
    """

    connector: str
    name: str
    db: str
    schema: str
    table: str
    ts_ms: int
    snapshot: str = "false"
    sequence: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "version": SOURCE_VERSION,
            "connector": self.connector,
            "name": self.name,
            "ts_ms": self.ts_ms,
            "snapshot": self.snapshot,
            "db": self.db,
            "sequence": self.sequence,
            "schema": self.schema,
            "table": self.table,
        }
        doc.update(self.extra)
        return doc

    def schema_fields(self) -> list[Field]:
        """Connect schema of :meth:`to_json` (``extra`` values typed by their Python type)."""
        fields = [
            Field("version", "string", optional=False),
            Field("connector", "string", optional=False),
            Field("name", "string", optional=False),
            Field("ts_ms", "int64", optional=False),
            Field(
                "snapshot",
                "string",
                name="io.debezium.data.Enum",
                parameters={
                    "allowed": "true,first,first_in_data_collection,"
                    "last_in_data_collection,last,false,incremental"
                },
            ),
            Field("db", "string", optional=False),
            Field("sequence", "string"),
            Field("schema", "string", optional=False),
            Field("table", "string", optional=False),
        ]
        for key, value in self.extra.items():
            fields.append(Field(key, _connect_type_of(value)))
        return fields


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One row change, ready to render.

    Invariants (checked in ``__post_init__``): ``op`` is one of :data:`OPS`; ``r``/``c``
    have ``after`` and no ``before``; ``d`` has ``before`` and no ``after``; ``u`` has
    ``after``; ``t`` has neither and ``key`` is ``None``.  ``key`` is the primary-key
    columns in key order (``None`` only for ``t``).
    """

    op: Op
    key: Row | None
    before: Row | None
    after: Row | None
    source: Source
    ts_ms: int

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r}")
        if self.op in ("r", "c") and (self.after is None or self.before is not None):
            raise ValueError(f"op {self.op!r} needs after and no before")
        if self.op == "d" and (self.before is None or self.after is not None):
            raise ValueError("op 'd' needs before and no after")
        if self.op == "u" and self.after is None:
            raise ValueError("op 'u' needs after")
        if self.op == "t" and (self.before or self.after or self.key is not None):
            raise ValueError("op 't' has no key, before or after")
        if self.op != "t" and self.key is None:
            raise ValueError(f"op {self.op!r} needs a key")

    def payload(self) -> dict[str, Any]:
        """The envelope (the value without a schema part) as a JSON-ready dict."""
        return {
            "before": None if self.before is None else dict(self.before),
            "after": None if self.after is None else dict(self.after),
            "source": self.source.to_json(),
            "op": self.op,
            "ts_ms": self.ts_ms,
        }


@dataclass(frozen=True, slots=True)
class TableSchema:
    """Connect schemas of one table, for ``schemas.enable`` output.

    ``topic`` names the Connect schemas (``<topic>.Key``, ``<topic>.Value``,
    ``<topic>.Envelope``) as Debezium does; ``source_name`` names the source struct
    (``io.debezium.connector.postgresql.Source``, ``riverbed.cdc.sqlite.Source``).
    """

    topic: str
    key_fields: Sequence[Field]
    value_fields: Sequence[Field]
    source_name: str


def dumps(document: Any) -> bytes:
    """Compact UTF-8 JSON, keys in insertion order: the exact bytes we produce."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode(
        "utf-8"
    )


def encode_key(key: Row | None, schema: TableSchema | None = None) -> bytes | None:
    """The record key: ``{"id": 7}`` (``None`` for a truncate, which has no key).

    With ``schema`` it is wrapped as ``{"schema": <Key struct>, "payload": {...}}``."""
    if key is None:
        return None
    payload = dict(key)
    if schema is None:
        return dumps(payload)
    return dumps(
        {
            "schema": {
                "type": "struct",
                "fields": [f.to_json() for f in schema.key_fields],
                "optional": False,
                "name": f"{schema.topic}.Key",
            },
            "payload": payload,
        }
    )


def encode_value(event: ChangeEvent, schema: TableSchema | None = None) -> bytes:
    """The record value: the envelope, optionally with Debezium's schema part."""
    payload = event.payload()
    if schema is None:
        return dumps(payload)
    row = {
        "type": "struct",
        "fields": [f.to_json() for f in schema.value_fields],
        "optional": True,
        "name": f"{schema.topic}.Value",
    }
    envelope = {
        "type": "struct",
        "fields": [
            {**row, "field": "before"},
            {**row, "field": "after"},
            {
                "type": "struct",
                "fields": [f.to_json() for f in event.source.schema_fields()],
                "optional": False,
                "name": schema.source_name,
                "field": "source",
            },
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
        "optional": False,
        "name": f"{schema.topic}.Envelope",
        "version": 2,
    }
    return dumps({"schema": envelope, "payload": payload})


def records_for(
    event: ChangeEvent,
    schema: TableSchema | None = None,
) -> list[tuple[bytes | None, bytes | None]]:
    """The ``(key, value)`` records one change becomes, in the order to produce them.

    * ``d`` -> the event, then a tombstone ``(key, None)``;
    * ``u`` whose primary key changed -> ``d`` on the old key (``before`` image), its
      tombstone, then ``c`` on the new key (Debezium's behaviour);
    * anything else -> one record.
    """
    if event.op == "u" and event.before is not None and event.key is not None:
        old_key = {name: event.before.get(name) for name in event.key}
        if old_key != dict(event.key):
            delete = ChangeEvent("d", old_key, event.before, None, event.source, event.ts_ms)
            create = ChangeEvent("c", event.key, None, event.after, event.source, event.ts_ms)
            return records_for(delete, schema) + records_for(create, schema)
    key = encode_key(event.key, schema)
    records: list[tuple[bytes | None, bytes | None]] = [(key, encode_value(event, schema))]
    if event.op == "d":
        records.append((key, None))
    return records


def topic_name(prefix: str, schema: str, table: str) -> str:
    """``<prefix>.<schema>.<table>``: one topic per captured table.  A character Kafka does
    not allow in topic names (anything but ``[a-zA-Z0-9._-]``) becomes ``_``, as Debezium's
    topic naming does (``"order lines"`` -> ``order_lines``)."""
    return ".".join(_ILLEGAL_TOPIC_CHARS.sub("_", part) for part in (prefix, schema, table))


_ILLEGAL_TOPIC_CHARS = re.compile(r"[^a-zA-Z0-9._-]")


def _connect_type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "string"
