"""A change to a derived view: one Kafka record of a changelog topic, decoded.

The offset rule (docs/views.md): every change carries the position it was read at,
``(topic, partition, offset)``.  A view stores, beside its data and in the same local
transaction, the highest offset it has applied per ``(topic, partition)`` -- its
*high-water offset*.  A change whose offset is not above that high-water offset is
skipped, so applying the same changes again (a replay after a crash between the view's
commit and the consumer's) changes nothing.  This relies on one record per key-update
being appended in order to one partition, which is how CDC connectors and keyed
producers write.

Record formats accepted by :func:`decode_record`:

* Debezium's envelope (``riverbed cdc``, docs/cdc.md), with or without the
  ``{"schema", "payload"}`` wrapper: ``c``/``r``/``u`` upsert the ``after`` image under
  the record key, ``d`` deletes the key, ``t`` (truncate) is skipped (no key);
* a tombstone (null value): deletes the key;
* any other JSON object value: an event that upserts the object under the key.

The key of a view entry is the record key's bytes decoded as UTF-8 with JSON objects
re-serialised canonically (sorted keys, no spaces), so ``{"id": 7}`` and ``{ "id":7 }``
name the same entry.  Pure, no I/O: safe from any thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from riverbed.errors import RiverbedError


class ViewError(RiverbedError):
    """A derived view cannot apply a change (bad record, store unreachable, bad spec)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One change at ``(topic, partition, offset)``: ``row`` set upserts, ``None`` deletes."""

    topic: str
    partition: int
    offset: int
    key: str
    row: dict[str, Any] | None


def canonical_key(raw: bytes) -> str:
    """The view key of a record key (see the module docstring)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if isinstance(parsed, dict) and set(parsed) == {"schema", "payload"}:
        parsed = parsed["payload"]
    return json.dumps(parsed, sort_keys=True, separators=(",", ":"))


def decode_record(
    topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None
) -> Change | None:
    """The change a record carries, or None for one a view ignores (truncate, no key)."""
    if key is None:
        return None
    view_key = canonical_key(key)
    if value is None:
        return Change(topic, partition, offset, view_key, None)
    try:
        document = json.loads(value)
    except ValueError as exc:
        raise ViewError(f"{topic}-{partition}@{offset}: value is not JSON: {exc}") from None
    if isinstance(document, dict) and set(document) == {"schema", "payload"}:
        document = document["payload"]
    if not isinstance(document, dict):
        raise ViewError(f"{topic}-{partition}@{offset}: value is not a JSON object")
    op = document.get("op")
    if op in ("c", "r", "u") and "after" in document:
        after = document["after"]
        if not isinstance(after, dict):
            raise ViewError(f"{topic}-{partition}@{offset}: op {op!r} without an after image")
        return Change(topic, partition, offset, view_key, dict(after))
    if op == "d" and "before" in document:
        return Change(topic, partition, offset, view_key, None)
    if op == "t":
        return None
    return Change(topic, partition, offset, view_key, dict(document))


class View(Protocol):
    """A derived view: applies changes idempotently, remembers its high-water offsets.

    ``apply`` runs one local transaction per call: the upserts and deletes of the
    changes newer than the stored high-water offset of their partition, and the new
    high-water offsets, commit together or not at all.  A crash before the commit
    leaves the previous state; after it, the changes are skipped when replayed.
    Changes of one partition must come in offset order within a call.  Not
    thread-safe: one writer per view (a second writer is not fenced).
    """

    def apply(self, changes: list[Change]) -> int:
        """Apply ``changes``; return how many were newer than the view (applied)."""
        ...

    def high_water_offsets(self) -> dict[tuple[str, int], int]:
        """``(topic, partition) -> offset of the last applied change`` (committed)."""
        ...

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every entry, ``key -> row``: for tests and rebuild checks."""
        ...

    def close(self) -> None:
        """Release the store's connection."""
        ...


def newest_per_key(
    changes: list[Change], high_water: dict[tuple[str, int], int]
) -> tuple[dict[str, Change], dict[tuple[str, int], int]]:
    """The changes to apply (the last one per key among those above ``high_water``) and
    the high-water offsets after them.  Pure; shared by the store adapters."""
    latest: dict[str, Change] = {}
    marks = dict(high_water)
    for change in changes:
        position = (change.topic, change.partition)
        if change.offset <= marks.get(position, -1):
            continue
        marks[position] = change.offset
        latest[change.key] = change
    return latest, marks
