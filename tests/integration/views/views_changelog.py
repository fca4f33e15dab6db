"""A CDC-like changelog for the views tests: Debezium envelopes (as ``riverbed cdc``
writes them, docs/cdc.md) with inserts, updates, deletes and their tombstones, and the
table it must leave."""

from __future__ import annotations

import json
import random
from typing import Any

Record = tuple[bytes, bytes | None]


def _key(user_id: int) -> bytes:
    return json.dumps({"id": user_id}).encode()


def view_key(user_id: int) -> str:
    return json.dumps({"id": user_id}, separators=(",", ":"))


def changelog(users: int, steps: int, seed: int = 7) -> tuple[list[Record], dict[str, Any]]:
    """``steps`` random changes over ``users`` ids; returns (records, expected table)."""
    rng = random.Random(seed)
    words = ["river", "delta", "basin", "harbor", "meadow", "canyon", "glacier", "estuary"]
    table: dict[int, dict[str, Any]] = {}
    records: list[Record] = []
    for step in range(steps):
        user_id = rng.randrange(users)
        before = table.get(user_id)
        if before is not None and rng.random() < 0.25:
            envelope = {"before": before, "after": None, "op": "d", "ts_ms": step}
            records.append((_key(user_id), json.dumps(envelope).encode()))
            records.append((_key(user_id), None))  # the tombstone
            del table[user_id]
            continue
        after = {"id": user_id, "name": f"{rng.choice(words)} {step}", "visits": step}
        op = "c" if before is None else "u"
        envelope = {"before": before, "after": after, "op": op, "ts_ms": step}
        records.append((_key(user_id), json.dumps(envelope).encode()))
        table[user_id] = after
    return records, {view_key(i): row for i, row in sorted(table.items())}
