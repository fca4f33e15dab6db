"""Producer ids: unique across restarts (block reservation), epoch bumps (KIP-360)."""

from __future__ import annotations

from pathlib import Path

from riverbed.broker.producer_ids import MAX_EPOCH, ProducerIdManager


def test_ids_never_repeat_across_restarts(tmp_path: Path) -> None:
    seen: set[int] = set()
    for _restart in range(3):
        manager = ProducerIdManager(tmp_path, block_size=4)
        for _ in range(6):
            pid = manager.next_producer_id()
            assert pid not in seen
            seen.add(pid)
    assert len(seen) == 18


def test_epoch_bump_and_overflow(tmp_path: Path) -> None:
    manager = ProducerIdManager(tmp_path)
    pid, epoch = manager.init_producer(-1, -1)
    assert epoch == 0
    assert manager.init_producer(pid, epoch) == (pid, 1)
    new_pid, new_epoch = manager.init_producer(pid, MAX_EPOCH - 1)
    assert new_pid != pid and new_epoch == 0
    unknown, _ = manager.init_producer(10_000_000, 3)  # never handed out: a fresh id
    assert unknown not in (pid, new_pid, 10_000_000)
