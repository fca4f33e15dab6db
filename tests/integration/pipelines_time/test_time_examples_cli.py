"""``riverbed pipeline run sessions|fraud`` from a plain shell, as the outside checks run
them: a fresh process per run (its own JVM), topics created by the run, two
``--available-now`` runs on one checkpoint, then a run stopped by SIGTERM (exit 0).

Marked ``pipeline_cli`` (each run starts a JVM: ~4 min for the file on 2 cores), so it
runs only when selected::

    .venv/bin/python -m pytest -q -p no:cacheprovider -m pipeline_cli \
        tests/integration/pipelines_time/test_time_examples_cli.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing.broker_process import BrokerProcess, wait_until

from .conftest import drain, produce_json
from .contract import DELAY_MS, MINUTE_MS, T0, final_sessions, fraud_alerts

pytestmark = pytest.mark.pipeline_cli

CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]


def pipeline_run(name: str, bootstrap: str, checkpoint: Path, *extra: str) -> list[str]:
    return [
        *CLI,
        "pipeline",
        "run",
        name,
        "--bootstrap-server",
        bootstrap,
        "--checkpoint",
        str(checkpoint),
        *extra,
    ]


def run_available_now(name: str, bootstrap: str, checkpoint: Path) -> None:
    done = subprocess.run(
        pipeline_run(name, bootstrap, checkpoint, "--available-now"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_sessions_cli(broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    views = [
        {"user_id": "a", "url": "/1", "ts": T0},
        {"user_id": "a", "url": "/2", "ts": T0 + 30 * MINUTE_MS},
        {"user_id": "b", "url": "/x", "ts": T0 + 90 * MINUTE_MS},
    ]
    run_available_now("sessions", bootstrap, tmp_path / "chk")  # creates both topics
    assert drain(bootstrap, "sessions") == []
    produce_json(bootstrap, "pageviews", views)
    run_available_now("sessions", bootstrap, tmp_path / "chk")
    watermark = T0 + 80 * MINUTE_MS
    out = drain(bootstrap, "sessions")
    assert [v for _, v in out] == final_sessions(views, watermark)
    assert [k for k, _ in out] == [b"a"]
    # A long-running run: new input is processed, SIGTERM ends it with exit 0.
    later = {"user_id": "c", "url": "/y", "ts": T0 + 200 * MINUTE_MS}
    process = subprocess.Popen(
        pipeline_run("sessions", bootstrap, tmp_path / "chk"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        produce_json(bootstrap, "pageviews", [later])
        wait_until(lambda: len(drain(bootstrap, "sessions")) == 2, 300, "b's session")
        os.kill(process.pid, signal.SIGTERM)
        assert process.wait(timeout=120) == 0, (
            process.stderr.read()[-3000:] if process.stderr else ""
        )
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    expected = final_sessions([*views, later], later["ts"] - DELAY_MS)
    assert sorted(str(v) for _, v in drain(bootstrap, "sessions")) == sorted(map(str, expected))


def test_fraud_cli(broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    m = MINUTE_MS
    logins: list[dict[str, Any]] = [
        *[{"user_id": "u", "ok": False, "ts": T0 + t * m} for t in (0, 1, 2)],
        {"user_id": "u", "ok": True, "ts": T0 + 4 * m},
        {"user_id": "v", "ok": True, "ts": T0 + 15 * m},
    ]
    produce_json(bootstrap, "logins", logins[:2])
    run_available_now("fraud", bootstrap, tmp_path / "chk")
    produce_json(bootstrap, "logins", logins[2:])
    run_available_now("fraud", bootstrap, tmp_path / "chk")
    out = drain(bootstrap, "fraud-alerts")
    assert [v for _, v in out] == fraud_alerts(logins)
    assert [k for k, _ in out] == [b"u"]
