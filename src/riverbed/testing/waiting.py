"""Condition polling for tests: wait on a condition against a deadline, never a bare sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.1
) -> T:
    """Call ``condition`` until it returns a truthy value and return that value.

    It is called at least once, then every ``interval_s`` seconds (a polling interval, not a
    synchronisation delay) until ``timeout_s`` has passed on the monotonic clock, when an
    ``AssertionError`` naming ``what`` is raised.  Exceptions from ``condition`` propagate.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)
