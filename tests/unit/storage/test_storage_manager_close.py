"""LogManager.close on a failing disk: every log is still closed on its own, and one
error names the partitions left unclean and the first failure with its path."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from _batches import batch

from riverbed.clock import ManualClock
from riverbed.errors import StorageError
from riverbed.storage import LogConfig, LogManager, faults
from riverbed.storage.manager import LogsNotClosedError

# No flusher thread and an interval policy: a flush waiter stays pending until close.
INTERVAL = LogConfig(flush_messages=1_000_000, flush_ms=3_600_000)
NAMES = [("__internal", 0), ("a", 0), ("a", 1), ("b", 0)]
FAILING = {"__internal-0", "a-1"}


def _failing_path(path: str) -> bool:
    return any(part in FAILING for part in Path(path).parts)


def test_close_closes_every_log_and_reports_the_failures(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, clock=ManualClock(), start_background=False)
    waits = {}
    for topic, p in NAMES:
        plog = manager.get_or_create(topic, p, INTERVAL)
        waits[f"{topic}-{p}"] = plog.flush_future(plog.append(batch(b"v")).last_offset)
    with (
        faults.inject("segment.fsync", error=errno.ENOSPC, match=_failing_path),
        pytest.raises(LogsNotClosedError) as info,
    ):
        manager.close()
    error = info.value
    assert isinstance(error, StorageError)
    assert error.partitions == ["a-1", "__internal-0"]  # user topics first
    message = str(error)
    assert "\n" not in message
    assert message.startswith("2 of 4 partition log(s) not closed cleanly (a-1, __internal-0)")
    assert "(ENOSPC)" in message and str(tmp_path) in message
    assert isinstance(error.__cause__, OSError)
    for name, fut in waits.items():
        if name in FAILING:
            assert isinstance(fut.exception(timeout=0), StorageError), name
        else:
            assert fut.result(timeout=0) is None, name
    for topic, p in NAMES:
        clean = (tmp_path / f"{topic}-{p}" / ".clean_shutdown").exists()
        assert clean == (f"{topic}-{p}" not in FAILING)

    # the data dir lock was released, and every log recovers with its record
    reopened = LogManager(tmp_path, clock=ManualClock(), start_background=False)
    try:
        assert {f"{t}-{p}": log.log_end_offset for (t, p), log in reopened.logs().items()} == {
            f"{t}-{p}": 1 for t, p in NAMES
        }
    finally:
        reopened.close()


def test_close_without_failures_raises_nothing(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, clock=ManualClock(), start_background=False)
    manager.get_or_create("a", 0, INTERVAL).append(batch(b"v"))
    manager.close()
    manager.close()  # idempotent
    assert (tmp_path / "a-0" / ".clean_shutdown").exists()
