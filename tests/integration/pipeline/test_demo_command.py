"""``riverbed demo`` end to end, as a user runs it: a process of its own, then Ctrl-C.

What a newcomer sees is part of the contract: stdout holds the demo's own lines only,
stderr stays empty on success (Spark, the JVM and librdkafka log to ``demo.log``), and
every way it ends (done, Ctrl-C, failure) is one line and an exit code, never a traceback.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
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


def _number(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in:\n{text}"
    return int(match.group(1).replace(",", ""))


def test_demo_runs_for_its_duration_prints_the_table_and_resumes(tmp_path: Path) -> None:
    data_dir = tmp_path / "demo"
    args = [*DEMO, "--users", "4", "--rate", "150", "--data-dir", str(data_dir)]
    first = subprocess.run(
        [*args, "--duration", "6"], capture_output=True, text=True, timeout=240, check=False
    )
    out = first.stdout
    assert first.returncode == 0, out + first.stderr
    assert first.stderr == "", first.stderr  # the noise is in demo.log
    assert "lag 0" in out and "summary" in out and "page views per user per hour" in out
    assert re.search(r"user-000  2024-01-01 00:00 +\d+ +\d+ +\d+ +\d+ +\d+ +\d+", out), out
    produced = _number(r"produced +([\d,]+) page views", out)
    on_time = _number(r"([\d,]+) on time \(counted\)", out)
    assert _number(r"read ([\d,]+) in", out) == produced > 0
    with sqlite3.connect(data_dir / "analytics.sqlite") as db:
        counted = db.execute("SELECT SUM(count) FROM pageviews_per_user_hour").fetchone()[0]
    assert counted == on_time
    log = (data_dir / "demo.log").read_text()
    assert "riverbed demo starting" in log and "progress: " in log, log[-3000:]
    assert str(data_dir / "demo.log") in out

    again = subprocess.run(
        [*args, "--duration", "2"], capture_output=True, text=True, timeout=240, check=False
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"resuming   {produced:,} page views" in again.stdout
    assert "all runs in this data dir" in again.stdout
    with sqlite3.connect(data_dir / "analytics.sqlite") as db:
        total = db.execute("SELECT SUM(count) FROM pageviews_per_user_hour").fetchone()[0]
    assert total == on_time + _number(r"([\d,]+) on time \(counted\)", again.stdout)


def test_ctrl_c_stops_broker_generator_and_spark_without_a_traceback(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            *DEMO,
            "--duration",
            "600",
            "--users",
            "4",
            "--rate",
            "100",
            "--data-dir",
            str(tmp_path / "demo"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
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
    assert stderr.splitlines() == [
        f"riverbed demo: interrupted; broker, clickstream and Spark stopped "
        f"(log: {tmp_path / 'demo' / 'demo.log'})"
    ], stderr
    assert _group_gone(proc.pid, 30), "Spark's JVM or a worker outlived the demo"


def test_a_failure_ends_with_the_cause_and_one_line_not_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java")}
    proc = subprocess.run(
        [*DEMO, "--duration", "5", "--data-dir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == f"last lines of {tmp_path / 'demo' / 'demo.log'}:"
    assert any("no-java/bin/java" in line for line in lines[1:-1]), proc.stderr  # the cause
    assert lines[-1].startswith("riverbed demo: error: ") and "JAVA_GATEWAY" in lines[-1]
    assert "Traceback" not in proc.stderr
    assert "Traceback" in (tmp_path / "demo" / "demo.log").read_text()  # for whoever digs
