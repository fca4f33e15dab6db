"""Helpers for the CDC tests (imported by basename, so the name is unique): run the
connector as its own process, read a topic to its end, wait with deadlines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from riverbed.testing.json_topic import read_json_topic, wait_json_topic

# re-exported: the CDC tests import it from here
from riverbed.testing.waiting import wait_until as wait_until

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]
WRITER = Path(__file__).with_name("sqlite_writer.py")


def riverbed(*args: str, timeout_s: float = 60) -> tuple[int, str, str]:
    """Run ``riverbed ARGS`` to completion: (exit code, stdout, stderr)."""
    done = subprocess.run([*ENTRY, *args], capture_output=True, timeout=timeout_s)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


class ConnectorProcess:
    """``riverbed cdc sqlite`` in the background; stderr goes to a file for the failure
    message."""

    def __init__(self, db: Path, bootstrap: str, *extra: str) -> None:
        self.log = db.with_name(f"connector-{uuid.uuid4().hex[:6]}.log")
        self._log_file = self.log.open("wb")
        self.proc = subprocess.Popen(
            [*ENTRY, "cdc", "sqlite", "--db", str(db), "--bootstrap-server", bootstrap, *extra],
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )

    def terminate(self, timeout_s: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self._wait(timeout_s)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self._wait(30)

    def _wait(self, timeout_s: float) -> int:
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._log_file.close()

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def read_topic(bootstrap: str, topic: str, timeout_s: float = 20) -> list[tuple[Any, Any]]:
    """Every record of partition 0 from the beginning to the high watermark, keys and values
    parsed as JSON (``None`` for a tombstone); ``[]`` while the topic does not exist
    (:func:`riverbed.testing.json_topic.read_json_topic`)."""
    return read_json_topic(bootstrap, topic, timeout_s=timeout_s)


def latest_per_key(records: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
    """What compaction keeps: the last value per key, tombstoned keys removed."""
    state: dict[str, Any] = {}
    for key, value in records:
        k = json.dumps(key, sort_keys=True)
        if value is None:
            state.pop(k, None)
        else:
            state[k] = value["after"]
            if state[k] is None:
                del state[k]
    return state


read_at_least = wait_json_topic  # read_topic once it holds at least count records


def pending_changes(db: Path) -> int:
    """Rows in the change table (-1 before the connector created it)."""
    import sqlite3

    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT count(*) FROM _riverbed_cdc_changes").fetchone()[0])
    except sqlite3.OperationalError:
        return -1
    finally:
        conn.close()


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))
