"""``--metrics-listen`` mistakes are one line and a non-zero exit, before any data is written."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from riverbed.testing.broker_process import CLI, free_port


def _broker(tmp_path: Path, metrics_listen: str) -> subprocess.CompletedProcess[str]:
    args = [
        *CLI,
        "--data-dir",
        str(tmp_path / "data"),
        "--listen",
        f"127.0.0.1:{free_port()}",
        "--metrics-listen",
        metrics_listen,
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def test_a_bad_address_is_one_line(tmp_path: Path) -> None:
    result = _broker(tmp_path, "nowhere")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "riverbed: error: metrics.listen expects HOST:PORT, got 'nowhere'"
    ]


def test_a_port_in_use_fails_the_start_before_the_data_dir(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _broker(tmp_path, f"127.0.0.1:{port}")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"cannot listen on 127.0.0.1:{port} (metrics.listen)" in result.stderr
    assert not (tmp_path / "data").exists()
