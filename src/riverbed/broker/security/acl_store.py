"""Durable ACLs: ``<data dir>/acls.json``.

File format (JSON, replaced atomically by :func:`~riverbed.broker.state_file.write_json_atomic`:
tmp + fsync + rename + fsync(dir), so a crash leaves the old or the new file whole)::

    {"version": 1,
     "acls": [{"resource_type": "TOPIC", "resource_name": "orders",
               "pattern_type": "LITERAL", "principal": "User:alice", "host": "*",
               "operation": "READ", "permission_type": "ALLOW"}, ...]}

Enum values are stored by Kafka's names.  Each change (a CreateAcls or DeleteAcls
request) is one batch written once; the in-memory set is swapped only after the write,
so an authorization never sees ACLs that are not on disk, and a failed write leaves the
set as it was.  Not thread-safe: the broker's event loop is the only writer; readers
get an immutable frozenset.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from riverbed.broker.security.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.errors import StorageError

FILE_NAME = "acls.json"
FORMAT_VERSION = 1


class AclStore:
    """The set of :class:`AclBinding` persisted in ``directory`` (an ``AclSource``)."""

    def __init__(self, directory: Path) -> None:
        self._path = Path(directory) / FILE_NAME
        self._acls: frozenset[AclBinding] = frozenset()
        self._load()

    def _load(self) -> None:
        raw = read_json(self._path)
        if raw is None:
            return
        try:
            if raw.get("version") != FORMAT_VERSION:
                raise ValueError(f"unknown version {raw.get('version')!r}")
            self._acls = frozenset(_decode(entry) for entry in raw["acls"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise StorageError(f"state file {str(self._path)!r} is not valid: {exc}") from None

    def acls(self) -> frozenset[AclBinding]:
        return self._acls

    def apply(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        """Add and remove a batch, then write the file once (skipped when nothing
        changes); on an OSError the set is left as it was and the error propagates."""
        acls = (self._acls - frozenset(removed)) | frozenset(added)
        if acls == self._acls:
            return
        write_json_atomic(
            self._path,
            {
                "version": FORMAT_VERSION,
                "acls": [_encode(a) for a in sorted(acls)],
            },
        )
        self._acls = acls


def _encode(acl: AclBinding) -> dict[str, str]:
    return {
        "resource_type": acl.resource_type.name,
        "resource_name": acl.resource_name,
        "pattern_type": acl.pattern_type.name,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation.name,
        "permission_type": acl.permission_type.name,
    }


def _decode(entry: Any) -> AclBinding:
    return AclBinding(
        resource_type=ResourceType[entry["resource_type"]],
        resource_name=str(entry["resource_name"]),
        pattern_type=PatternType[entry["pattern_type"]],
        principal=str(entry["principal"]),
        host=str(entry["host"]),
        operation=AclOperation[entry["operation"]],
        permission_type=AclPermissionType[entry["permission_type"]],
    )
