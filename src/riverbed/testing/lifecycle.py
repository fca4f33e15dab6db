"""Shared lifecycle plumbing for the test harness's child processes and servers."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any, Self


class _ExitHook:
    """``__exit__`` runs :meth:`_on_exit` on every exit of the ``with`` block, exceptions
    included (not swallowed)."""

    def _on_exit(self) -> None:
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._on_exit()


class StartStopContext(_ExitHook):
    """Mixin: ``with X(...) as x`` binds ``x = X(...).start()`` and calls ``x.stop()`` on exit.

    The subclass provides ``start()`` (returning the started instance) and ``stop()``
    (idempotent, safe after a failed start).  ``stop()`` runs on every exit of the block,
    exceptions included; it does not swallow the block's exception.
    """

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def _on_exit(self) -> None:
        self.stop()


class ClosingContext(_ExitHook):
    """Mixin: ``with X(...) as x`` binds the instance itself (nothing started) and calls
    ``x.close()`` on every exit of the block, exceptions included (not swallowed)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def _on_exit(self) -> None:
        self.close()


def log_tail(workdir: Path, names: tuple[str, ...], lines: int = 40) -> str:
    """The last ``lines`` lines of each of ``workdir``'s files ``names`` that exist, each
    under a ``--- name`` header (for error messages); ``""`` when none exists."""
    out = []
    for name in names:
        path = workdir / name
        if path.exists():
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {name}\n" + "\n".join(text))
    return "\n".join(out)


def stop_process_group(
    proc: subprocess.Popen[Any] | None, timeout_s: float, kill_wait_s: float = 30
) -> None:
    """SIGTERM the process group ``proc`` leads (a child started with
    ``start_new_session=True``) and wait up to ``timeout_s`` for ``proc`` to exit; then
    SIGKILL the group and wait up to ``kill_wait_s`` (``subprocess.TimeoutExpired`` if it
    still has not exited).  Nothing when ``proc`` is ``None`` or has already exited."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(kill_wait_s)
