"""``riverbed quotas`` through the console entry point: alter, describe (text and JSON),
delete a key, and a refused key reported in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from riverbed.testing.embedded import EmbeddedBroker

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]


def riverbed(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, *args], capture_output=True, text=True, timeout=90, env=dict(os.environ)
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_quotas_alter_describe_delete(tmp_path: Path) -> None:
    with EmbeddedBroker(tmp_path / "d") as broker:
        bs = ("--bootstrap-server", broker.bootstrap_servers)
        done = riverbed(
            "quotas",
            "alter",
            "--client-id",
            "app",
            "--add-config",
            "producer_byte_rate=1048576,consumer_byte_rate=2048",
            *bs,
        )
        assert done.returncode == 0, done.stderr
        done = riverbed(
            "quotas",
            "alter",
            "--user",
            "alice",
            "--client-id-default",
            "--add-config",
            "request_percentage=12.5",
            *bs,
        )
        assert done.returncode == 0, done.stderr
        text = riverbed("quotas", "describe", *bs).stdout.splitlines()
        assert "client-id=app: consumer_byte_rate=2048, producer_byte_rate=1048576" in text
        assert "client-id=<default>, user=alice: request_percentage=12.5" in text
        described = json.loads(
            riverbed("quotas", "describe", "--user", "alice", "--output", "json", *bs).stdout
        )
        assert described == [
            {"entity": {"client-id": None, "user": "alice"}, "quotas": {"request_percentage": 12.5}}
        ]
        done = riverbed(
            "quotas", "alter", "--client-id", "app", "--delete-config", "consumer_byte_rate", *bs
        )
        assert done.returncode == 0, done.stderr
        assert riverbed("quotas", "describe", "--client-id", "app", *bs).stdout.splitlines() == [
            "client-id=app: producer_byte_rate=1048576"
        ]
        done = riverbed("quotas", "alter", "--client-id", "app", "--add-config", "bogus=1", *bs)
        assert done.returncode != 0 and "invalid quota key 'bogus'" in done.stderr
