"""The ``riverbed`` console script: help, version, and user mistakes without tracebacks."""

from __future__ import annotations

import subprocess
import sys

from riverbed import __version__


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from riverbed.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_version() -> None:
    out = _run("--version")
    assert out.returncode == 0
    assert __version__ in out.stdout


def test_help_lists_usage() -> None:
    out = _run("--help")
    assert out.returncode == 0
    assert "Usage:" in out.stdout


def test_unknown_command_is_a_one_line_error_not_a_traceback() -> None:
    out = _run("no-such-command")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "no-such-command" in out.stderr
