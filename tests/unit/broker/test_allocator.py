"""riverbed.broker.allocator: glibc malloc thresholds for the broker process."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from riverbed.broker import allocator

GLIBC = platform.libc_ver()[0] == "glibc"


def _tune_in_child(env: dict[str, str]) -> str:
    # A child process: mallopt changes the whole process, so never the test runner's.
    code = "from riverbed.broker import allocator; print(allocator.tune())"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(not GLIBC, reason="glibc only")
def test_applies_on_glibc() -> None:
    env = {k: v for k, v in os.environ.items() if k not in allocator.ENV_OVERRIDES}
    assert _tune_in_child(env) == "True"


def test_the_environment_wins() -> None:
    for name in allocator.ENV_OVERRIDES:
        env = {**os.environ, name: str(1 << 20)}
        assert _tune_in_child(env) == "False"
