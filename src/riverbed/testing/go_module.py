"""Go modules whose own test suites run against the broker (franz-go, kafka-go): fetched
through the Go module proxy (a module zip carries its tests, so no git checkout is needed)
and their test binaries built once with ``go test -c`` and cached::

    ~/.cache/riverbed/<cache name>/<version>/<binary name>

A binary is built under a pid-suffixed ``.partial`` name and renamed into place, so a
build killed midway is redone and concurrent builders never see half a binary.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["GoUnavailable", "module_dir", "test_binary"]


class GoUnavailable(RuntimeError):
    """``go`` is missing, or the module proxy did not serve the module."""


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GOFLAGS"] = "-mod=mod"
    return env


def module_dir(module: str, version: str, timeout_s: float = 300.0) -> Path:
    """``go mod download`` ``module@version`` (a no-op when cached); its directory."""
    go = shutil.which("go")
    if go is None:
        raise GoUnavailable("go is not on PATH")
    with tempfile.TemporaryDirectory() as scratch:  # outside any module
        done = subprocess.run(
            [go, "mod", "download", "-json", f"{module}@{version}"],
            cwd=scratch,
            env=_go_env(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    try:
        info = json.loads(done.stdout)
    except json.JSONDecodeError:
        info = {}
    if done.returncode != 0 or "Dir" not in info:
        detail = info.get("Error") or done.stderr.strip() or done.stdout.strip()
        raise GoUnavailable(f"go mod download {module}@{version} failed: {detail}")
    return Path(info["Dir"])


def test_binary(
    module: str,
    version: str,
    package: str,
    binary: Path,
    timeout_s: float = 600.0,
) -> Path:
    """``binary``: ``go test -c`` of ``package`` (relative to the module's root, e.g.
    ``./pkg/kgo``) of ``module@version``, built if missing."""
    if binary.exists():
        return binary
    source = module_dir(module, version)
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_name(f"{binary.name}.{os.getpid()}.partial")
    done = subprocess.run(
        ["go", "test", "-c", "-o", str(partial), package],
        cwd=source,
        env=_go_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise GoUnavailable(f"go test -c {module} {package} failed:\n{done.stderr[-3000:]}")
    partial.replace(binary)
    return binary
