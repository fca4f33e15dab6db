"""The flush mark through a kept descriptor (issue 18.1: one ``pwrite`` per fsync of the
log, no open/close): same 32 bytes in place, created again after a reset or when it
vanished while its descriptor was evicted, descriptor released on close."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _batches import batch

from riverbed.clock import ManualClock
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage import fd_cache as fd_cache_module
from riverbed.storage.fd_cache import FdCache
from riverbed.storage.flush_mark import (
    FLUSH_MARK_FILE,
    MARK_SIZE,
    FlushMark,
    FlushMarkFile,
    encode,
    read_flush_mark,
)


def test_rewrites_in_place_through_one_descriptor(tmp_path: Path) -> None:
    cache = FdCache(8)
    mark = FlushMarkFile(tmp_path, cache)
    mark.write(FlushMark(0, 10, 4096))
    inode = (tmp_path / FLUSH_MARK_FILE).stat().st_ino
    mark.write(FlushMark(0, 25, 9000))
    assert cache.opens == 1
    assert (tmp_path / FLUSH_MARK_FILE).stat().st_ino == inode
    assert (tmp_path / FLUSH_MARK_FILE).read_bytes() == encode(FlushMark(0, 25, 9000))
    assert read_flush_mark(tmp_path) == FlushMark(0, 25, 9000)
    mark.close()
    assert cache.open_count == 0


def test_reset_removes_it_and_the_next_write_creates_it(tmp_path: Path) -> None:
    cache = FdCache(8)
    mark = FlushMarkFile(tmp_path, cache)
    mark.write(FlushMark(0, 10, 4096))
    mark.reset()
    assert not (tmp_path / FLUSH_MARK_FILE).exists()
    assert cache.open_count == 0
    mark.write(FlushMark(0, 3, 100))  # not into the removed inode
    assert read_flush_mark(tmp_path) == FlushMark(0, 3, 100)


def test_evicted_and_removed_is_created_again(tmp_path: Path) -> None:
    cache = FdCache(1)
    mark = FlushMarkFile(tmp_path, cache)
    mark.write(FlushMark(0, 10, 4096))
    other = cache.file(tmp_path / "other", create=True)  # evicts the mark's descriptor
    (tmp_path / FLUSH_MARK_FILE).unlink()
    mark.write(FlushMark(0, 11, 5000))
    assert read_flush_mark(tmp_path) == FlushMark(0, 11, 5000)
    assert (tmp_path / FLUSH_MARK_FILE).stat().st_size == MARK_SIZE
    other.close()
    mark.close()


def test_failed_write_drops_the_descriptor(tmp_path: Path) -> None:
    cache = FdCache(8)
    mark = FlushMarkFile(tmp_path / "gone", cache)
    with pytest.raises(FileNotFoundError):
        mark.write(FlushMark(0, 1, 1))
    (tmp_path / "gone").mkdir()
    mark.write(FlushMark(0, 1, 1))
    assert read_flush_mark(tmp_path / "gone") == FlushMark(0, 1, 1)
    mark.close()


def _mark_fds(directory: Path) -> int:
    target = str(directory / FLUSH_MARK_FILE)
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == target:
                count += 1
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor)
    return count


def test_log_flushes_write_the_mark_with_one_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: object, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fd_cache_module.os, "open", counting_open)
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, LogConfig(), clock=ManualClock())
    for i in range(3):
        log.append(batch(b"v%d" % i))
        log.flush()
        seg = log.segments()[-1]
        assert read_flush_mark(directory) == FlushMark(seg.base_offset, i + 1, seg.size)
    assert sum(p.endswith(FLUSH_MARK_FILE) for p in opened) == 1
    assert _mark_fds(directory) == 1
    log.truncate_to(1)  # resets the mark durably before cutting
    assert read_flush_mark(directory) is None
    log.append(batch(b"again"))
    log.flush()
    seg = log.segments()[-1]
    assert read_flush_mark(directory) == FlushMark(seg.base_offset, 2, seg.size)
    log.close()
    assert _mark_fds(directory) == 0
