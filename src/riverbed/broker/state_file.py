"""Small JSON state files in the data dir, replaced atomically.

Write protocol: serialise to ``<name>.tmp``, ``fsync`` it, ``rename`` over ``<name>``,
then ``fsync`` the directory.  A crash at any point leaves either the old or the new file
whole (a stray ``.tmp`` is ignored and overwritten by the next write); a reader never
sees a half-written file.  Not thread-safe: each file has one owner that serialises its
writes (the broker's event loop thread).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from riverbed.errors import StorageError
from riverbed.storage.atomic_file import write_atomically


def read_json(path: Path) -> Any | None:
    """The decoded JSON at ``path``, or None when the file does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return json.loads(data)
    except ValueError as exc:
        raise StorageError(f"state file {str(path)!r} is not valid JSON: {exc}") from None


def write_json_atomic(path: Path, value: Any) -> None:
    """Replace ``path`` with ``value`` as JSON: tmp + fsync + rename + fsync(dir)."""
    write_atomically(path, json.dumps(value, indent=2, sort_keys=True).encode())
