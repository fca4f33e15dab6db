"""The cluster's identity: a cluster id created once and kept in the data dir.

File ``<data_dir>/meta.json`` (written atomically, see :mod:`riverbed.broker.state_file`)::

    {"cluster_id": "<22-char base64url uuid, like Kafka's>", "version": 1}

The node id is configuration (``node.id``), not state; a single node always leads every
partition.  Created on first start; a crash before the rename leaves no file and the next
start creates a new id (nothing referred to the old one yet).
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from riverbed.broker.state_file import read_json, write_json_atomic
from riverbed.errors import StorageError

META_FILE = "meta.json"


def new_kafka_uuid_string() -> str:
    """A random uuid in Kafka's text form (base64url, no padding, 22 chars)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def load_or_create_cluster_id(data_dir: Path) -> str:
    """The persisted cluster id of ``data_dir``, creating it on first use."""
    path = data_dir / META_FILE
    meta = read_json(path)
    if meta is None:
        cluster_id = new_kafka_uuid_string()
        write_json_atomic(path, {"cluster_id": cluster_id, "version": 1})
        return cluster_id
    if not isinstance(meta, dict) or not isinstance(meta.get("cluster_id"), str):
        raise StorageError(f"{str(path)!r} has no cluster_id")
    return str(meta["cluster_id"])
