"""riverbed.file_lock: held for the block (another open file description cannot take
it), released after it, exceptions included; the lock file and its parents are made."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from riverbed.file_lock import exclusive_lock


def other_can_lock(path: Path) -> bool:
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
        return True


def test_held_for_the_block_and_released_after(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "deeper" / ".lock"
    with exclusive_lock(path):
        assert path.exists()
        assert not other_can_lock(path)
    assert other_can_lock(path)


def test_released_when_the_block_raises(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    with pytest.raises(RuntimeError), exclusive_lock(path):
        raise RuntimeError("build failed")
    assert other_can_lock(path)
