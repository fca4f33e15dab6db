"""``riverbed demo`` pointed at engines that are not there: one line and exit 1, no traceback.

Needs no cluster (runs in the default suite): the Kafka address is a port nobody listens
on, the Spark master likewise (checked before Spark starts, instead of Spark's minute of
registration retries).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from riverbed.demo.runner import check_master_reachable
from riverbed.errors import RiverbedError
from riverbed.testing.kafka_reference import free_port

DEMO = [sys.executable, "-c", "from riverbed.cli.demo_command import demo_command; demo_command()"]


def test_an_unreachable_bootstrap_server_is_one_line_and_exit_1(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    done = subprocess.run(
        [*DEMO, "--bootstrap-server", address, "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"riverbed demo: error: cannot reach --bootstrap-server {address}")


def test_an_unreachable_spark_master_is_refused_before_spark_starts() -> None:
    url = f"spark://127.0.0.1:{free_port()}"
    try:
        check_master_reachable(url, timeout_s=2)
    except RiverbedError as exc:
        assert str(exc).startswith(f"cannot reach Spark master {url}")
    else:
        raise AssertionError("no error")
    check_master_reachable("local[2]")  # left to Spark


def test_replication_factor_needs_a_bootstrap_server() -> None:
    done = subprocess.run(
        [*DEMO, "--replication-factor", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "--replication-factor needs --bootstrap-server" in done.stderr


def test_pipeline_run_with_an_unreachable_spark_master_is_one_line_and_exit_1(
    tmp_path: Path,
) -> None:
    url = f"spark://127.0.0.1:{free_port()}"
    command = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]
    command += ["pipeline", "run", "enrich", "--bootstrap-server", f"127.0.0.1:{free_port()}"]
    command += ["--checkpoint", str(tmp_path / "checkpoint"), "--master", url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"riverbed: error: cannot reach Spark master {url} "
        f"(127.0.0.1:{url.rsplit(':', 1)[1]}: Connection refused)"
    ]
    assert not (tmp_path / "checkpoint").exists()
