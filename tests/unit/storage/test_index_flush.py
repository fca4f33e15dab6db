"""Sparse index flush (issue 18.1: plain descriptor calls on the flusher's path): appends
the unwritten entries at their place, cuts stale bytes past them, creates the file."""

from __future__ import annotations

from pathlib import Path

from riverbed.storage.index import OffsetIndex, TimeIndex


def test_flush_appends_only_new_entries(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "0.index", 100)
    index.append(100, 0)
    index.flush()
    index.append(105, 4096)
    index.append(110, 8192)
    index.flush()
    index.flush()  # nothing new: no change
    again = OffsetIndex.load(tmp_path / "0.index", 100, 1 << 20)
    assert again is not None
    assert list(again.keys) == [100, 105, 110] and list(again.values) == [0, 4096, 8192]


def test_flush_cuts_stale_bytes_past_its_entries(tmp_path: Path) -> None:
    path = tmp_path / "0.timeindex"
    path.write_bytes(b"\xff" * 100)  # left over by a crash: not ours
    index = TimeIndex(path, 0)
    index.append(1_000, 3)
    index.flush()
    assert path.stat().st_size == index.entry_size
    again = TimeIndex.load(path, 0, 10)
    assert again is not None
    assert list(again.keys) == [1_000] and list(again.values) == [3]


def test_flush_after_clear_cuts_the_old_entries(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "0.index", 0)
    for i in range(5):
        index.append(i * 10, i * 4096)
    index.flush()
    index.clear()  # e.g. before a rebuild: the file still holds 5 entries
    index.append(0, 0)
    index.flush()
    assert (tmp_path / "0.index").stat().st_size == index.entry_size
