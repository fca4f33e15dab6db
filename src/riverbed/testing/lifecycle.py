"""Shared lifecycle plumbing for the test harness's child processes and servers."""

from __future__ import annotations

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
