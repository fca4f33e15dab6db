"""Time sources.  Everything that reads the time takes a :class:`Clock` so tests can
drive time by hand (:class:`ManualClock`) instead of sleeping.

All times are integer milliseconds since the Unix epoch (``*_ms``), Kafka's unit.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock time, ms since the epoch (record timestamps, retention)."""
        ...

    def monotonic_ms(self) -> int:
        """Monotonic time in ms (timeouts, intervals); only differences are meaningful."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to; thread-safe."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now = now_ms
        self._mono = 0
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def monotonic_ms(self) -> int:
        with self._lock:
            return self._mono

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock does not go backwards")
        with self._lock:
            self._now += ms
            self._mono += ms


SYSTEM_CLOCK = SystemClock()
