"""Fixtures for the views tests: a private redis-server (own port, own dir, no
persistence) and a broker process per module."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (scripts/setup installs it as root)")
    directory: Path = tmp_path_factory.mktemp("redis")
    port = free_port()
    with open(directory / "redis.log", "wb") as log:
        proc = subprocess.Popen(
            [
                server,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(directory),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"redis://127.0.0.1:{port}/0"

    def pong() -> bool:
        assert proc.poll() is None, (directory / "redis.log").read_text()
        try:
            return bool(redis.Redis.from_url(url).ping())
        except redis.ConnectionError:
            return False

    try:
        wait_until(pong, 60, "redis-server to answer PING")
        yield url
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A ``riverbed broker`` child process, reached only over the wire."""
    root = tmp_path_factory.mktemp("views-broker")
    proc = BrokerProcess(root / "data", free_port(), root / "broker.log")
    proc.start(timeout_s=180)
    try:
        yield proc
    finally:
        proc.close()
