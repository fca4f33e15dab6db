"""Durable client quota configuration: ``<data dir>/client_quotas.json``.

File format (JSON, replaced atomically by :func:`~riverbed.broker.state_file.write_json_atomic`:
tmp + fsync + rename + fsync(dir), so a crash leaves the old or the new file whole)::

    {"version": 1,
     "entries": [{"entity": {"user": "alice", "client-id": null},
                  "quotas": {"producer_byte_rate": 1048576.0}}]}

An entity maps each of its types to a name, ``null`` for ``<default>``; a type that is
absent is not part of the entity (see :mod:`riverbed.broker.quotas`).  Entities without
any quota left are dropped.  Changes are applied as one batch and written once; readers
see the batch only after it is on disk.  Not thread-safe: the broker's event loop is the
only caller (an administrative write, rare and small, fsynced on the loop as the SCRAM
store does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from riverbed.broker.quotas import Entity, Tags, resolve
from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.errors import StorageError

FILE_NAME = "client_quotas.json"
FORMAT_VERSION = 1

QuotaChange = tuple[Entity, str, float | None]
"""``(entity, key, value)``; value None removes the key."""


class ClientQuotaStore:
    """Entity -> quota key -> value, persisted in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self._path = Path(directory) / FILE_NAME
        self._quotas: dict[Entity, dict[str, float]] = {}
        self._load()

    def _load(self) -> None:
        raw = read_json(self._path)
        if raw is None:
            return
        try:
            if raw.get("version") != FORMAT_VERSION:
                raise ValueError(f"unknown version {raw.get('version')!r}")
            for item in raw["entries"]:
                parts = item["entity"]
                key: Entity = tuple(
                    sorted((str(t), None if n is None else str(n)) for t, n in parts.items())
                )
                self._quotas[key] = {str(k): float(v) for k, v in item["quotas"].items()}
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise StorageError(f"state file {str(self._path)!r} is not valid: {exc}") from None

    @property
    def quotas(self) -> Mapping[Entity, Mapping[str, float]]:
        """Every entity with at least one quota (read-only view; do not keep across awaits
        of an alteration)."""
        return self._quotas

    def lookup(self, user: str, client_id: str, key: str) -> tuple[float, Tags] | None:
        """The quota ``key`` for ``(user, client_id)`` by Kafka's precedence, with its tags."""
        return resolve(self._quotas, user, client_id, key)

    def apply(self, changes: Iterable[QuotaChange]) -> None:
        """Apply a batch, then write the file once; on an OSError the in-memory state is
        left as it was and the error propagates."""
        quotas = {e: dict(v) for e, v in self._quotas.items()}
        for entity, key, value in changes:
            values = quotas.setdefault(entity, {})
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
            if not values:
                del quotas[entity]
        write_json_atomic(
            self._path,
            {
                "version": FORMAT_VERSION,
                "entries": [
                    {"entity": dict(entity), "quotas": values}
                    for entity, values in sorted(quotas.items(), key=lambda i: repr(i[0]))
                ],
            },
        )
        self._quotas = quotas
