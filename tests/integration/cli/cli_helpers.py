"""Helpers for the command-line tests (imported by basename, so the name is unique): run
``riverbed`` in its own process as a user would, create topics and wait on conditions with
a deadline (never a bare sleep)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Mapping

from confluent_kafka.admin import AdminClient, NewTopic

# re-exported: the command-line tests import it from here
from riverbed.testing.waiting import wait_until as wait_until

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]
# the broker's group settings for quick joins (no initial rebalance delay)
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"}


def riverbed(
    bootstrap: str | None,
    *args: str,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 90,
) -> tuple[int, bytes, str]:
    """Run ``riverbed ARGS [--bootstrap-server BOOTSTRAP]``: (exit code, stdout, stderr).
    Asserts what every command promises: no traceback and no librdkafka log lines."""
    command = [*ENTRY, *args, *(["--bootstrap-server", bootstrap] if bootstrap else [])]
    done = subprocess.run(
        command,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=timeout_s,
        env={**os.environ, **(env or {})},
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert "%3|" not in stderr and "%4|" not in stderr, stderr
    return done.returncode, done.stdout, stderr


def new_topic(bootstrap: str, partitions: int = 1, **config: str) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=config)])
    futures[name].result(30)
    return name
