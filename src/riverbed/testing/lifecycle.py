"""Shared lifecycle plumbing for the test harness's child processes and servers."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Self


class StartStopContext:
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

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ClosingContext:
    """Mixin: ``with X(...) as x`` binds the instance itself (nothing started) and calls
    ``x.close()`` on every exit of the block, exceptions included (not swallowed)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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
