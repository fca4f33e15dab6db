"""``riverbed demo`` end to end, as a user runs it: a process of its own, then Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DEMO = [sys.executable, "-c", "from riverbed.cli.demo_command import demo_command; demo_command()"]


def _wait_for(proc: subprocess.Popen[str], text: str, lines: list[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return
    raise AssertionError(f"{text!r} not seen in time:\n{''.join(lines)}")


def _group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_demo_runs_for_its_duration_and_prints_the_table(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*DEMO, "--duration", "6", "--users", "4", "--rate", "150", "--data-dir",
         str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "page views per user per hour" in proc.stdout
    assert "user-000" in proc.stdout and "lag 0" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "demo" / "analytics.sqlite").exists()


def test_ctrl_c_stops_broker_generator_and_spark_without_a_traceback(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*DEMO, "--duration", "600", "--users", "4", "--rate", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    lines: list[str] = []
    try:
        _wait_for(proc, "produced", lines, timeout_s=180)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, "".join(lines) + stderr
    assert "interrupted" in stderr
    assert "Traceback" not in stderr, stderr
    assert _group_gone(proc.pid, 30), "Spark's JVM or a worker outlived the demo"
