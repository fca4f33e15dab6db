"""A stand-in for the part of pyspark's ``GroupState`` the stateful operators use, so their
functions can be driven through simulated micro-batches in plain Python."""

from __future__ import annotations


class FakeGroupState:
    """One key's state: ``saved`` (``None``: no state), the batch's watermark
    (``None``: none yet, read as 0) and whether this call is the key's timeout.
    ``setTimeoutTimestamp`` records the timer in ``timeout``; subclasses may check it."""

    def __init__(
        self, saved: tuple[str] | None, watermark_ms: int | None, timed_out: bool = False
    ) -> None:
        self.saved = saved
        self.watermark_ms = 0 if watermark_ms is None else watermark_ms
        self.hasTimedOut = timed_out
        self.timeout: int | None = None

    @property
    def exists(self) -> bool:
        return self.saved is not None

    @property
    def get(self) -> tuple[str]:
        assert self.saved is not None
        return self.saved

    def update(self, value: tuple[str]) -> None:
        self.saved = value

    def remove(self) -> None:
        self.saved = None

    def getCurrentWatermarkMs(self) -> int:
        return self.watermark_ms

    def setTimeoutTimestamp(self, ts: int) -> None:
        self.timeout = ts
