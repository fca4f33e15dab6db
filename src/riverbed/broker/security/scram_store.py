"""Durable SCRAM credentials: ``<data dir>/scram_credentials.json``.

File format (JSON, replaced atomically by :func:`~riverbed.broker.state_file.write_json_atomic`:
tmp + fsync + rename + fsync(dir), so a crash leaves the old or the new file whole)::

    {"version": 1,
     "users": {"alice": {"SCRAM-SHA-256": {"salt": B64, "stored_key": B64,
                                           "server_key": B64, "iterations": 8192}}}}

Only the stored form (salt, StoredKey, ServerKey, iterations) is kept, never a password
or salted password (see :mod:`riverbed.broker.security.scram`).  Changes are applied as
one batch and written once; readers see the batch only after it is on disk.  Not
thread-safe: the broker's event loop is the only caller.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from riverbed.broker.security.scram import ScramCredential, ScramMechanism
from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.errors import StorageError

FILE_NAME = "scram_credentials.json"
FORMAT_VERSION = 1


class ScramCredentialStore:
    """User -> mechanism -> :class:`ScramCredential`, persisted in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self._path = Path(directory) / FILE_NAME
        self._users: dict[str, dict[ScramMechanism, ScramCredential]] = {}
        self._load()

    def _load(self) -> None:
        raw = read_json(self._path)
        if raw is None:
            return
        try:
            if raw.get("version") != FORMAT_VERSION:
                raise ValueError(f"unknown version {raw.get('version')!r}")
            for user, mechanisms in raw["users"].items():
                for name, entry in mechanisms.items():
                    mechanism = ScramMechanism.from_name(name)
                    if mechanism is ScramMechanism.UNKNOWN:
                        raise ValueError(f"unknown mechanism {name!r}")
                    self._users.setdefault(user, {})[mechanism] = ScramCredential(
                        mechanism=mechanism,
                        salt=base64.b64decode(entry["salt"]),
                        stored_key=base64.b64decode(entry["stored_key"]),
                        server_key=base64.b64decode(entry["server_key"]),
                        iterations=int(entry["iterations"]),
                    )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise StorageError(f"state file {str(self._path)!r} is not valid: {exc}") from None

    def get(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self._users)

    def credentials(self, user: str) -> Mapping[ScramMechanism, ScramCredential]:
        return dict(self._users.get(user, {}))

    def apply(
        self,
        deletions: Iterable[tuple[str, ScramMechanism]],
        upsertions: Iterable[ScramCredentialUpsert],
    ) -> None:
        """Apply a batch (deletions first), then write the file once; on an OSError the
        in-memory state is left as it was and the error propagates."""
        users = {u: dict(m) for u, m in self._users.items()}
        for user, mechanism in deletions:
            users.get(user, {}).pop(mechanism, None)
            if user in users and not users[user]:
                del users[user]
        for user, credential in upsertions:
            users.setdefault(user, {})[credential.mechanism] = credential
        write_json_atomic(self._path, _encode(users))
        self._users = users


ScramCredentialUpsert = tuple[str, ScramCredential]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _encode(users: Mapping[str, Mapping[ScramMechanism, ScramCredential]]) -> dict[str, Any]:
    return {
        "version": FORMAT_VERSION,
        "users": {
            user: {
                c.mechanism.mechanism_name: {
                    "salt": _b64(c.salt),
                    "stored_key": _b64(c.stored_key),
                    "server_key": _b64(c.server_key),
                    "iterations": c.iterations,
                }
                for c in mechanisms.values()
            }
            for user, mechanisms in users.items()
        },
    }
