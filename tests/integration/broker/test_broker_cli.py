"""``riverbed broker`` in the foreground: serves, stops cleanly on SIGTERM, bad config exits 2."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from riverbed.protocol.messages import MetadataRequest

Wire = Any  # the conftest's wire client (handed out by fixtures)
Connect = Callable[[str], Any]

CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "broker"]


def test_broker_serves_and_stops_on_sigterm(tmp_path: Path, connect: Connect) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=3\nlog.retention.hours=1\n")
    proc = subprocess.Popen(
        [
            *CLI,
            "--data-dir",
            str(tmp_path / "d"),
            "--listen",
            "127.0.0.1:0",
            "--config-file",
            str(props),
            "--config",
            "auto.create.topics.enable=true",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        port = None
        for line in proc.stderr:  # blocks per line; the pytest timeout bounds it
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
                break
        assert port is not None
        wire = connect(f"127.0.0.1:{port}")
        ask = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="cli")])
        resp = wire.call(3, 12, ask)  # starts the auto-creation, answers at once (as Kafka)
        deadline = time.monotonic() + 60
        while not resp.topics[0].partitions:
            assert time.monotonic() < deadline, "the auto-created topic never appeared"
            time.sleep(0.05)
            resp = wire.call(3, 12, ask)
        assert len(resp.topics[0].partitions) == 3  # num.partitions from the file
        wire.close()
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(timeout=30) == 0
        assert "stopped" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_setting_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = subprocess.run(
        [*CLI, "--data-dir", str(tmp_path), "--config", "num.partitions=many"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "num.partitions" in out.stderr


def test_second_broker_on_same_data_dir_is_refused(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    first = subprocess.Popen(
        [*CLI, "--data-dir", str(data_dir), "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stderr is not None
        for line in first.stderr:  # wait until the first one owns the dir and serves
            if "listening on" in line:
                break
        second = subprocess.run(
            [*CLI, "--data-dir", str(data_dir), "--listen", "127.0.0.1:0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 1
        assert "Traceback" not in second.stderr
        assert f"in use by another process (pid {first.pid})" in second.stderr
        assert first.poll() is None  # the first broker is unharmed
    finally:
        first.kill()
        first.wait()
