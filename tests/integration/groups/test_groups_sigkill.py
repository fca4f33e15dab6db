"""A SIGKILLed member's partitions move to the survivors once its session times out
(6 s here), with the classic protocol and with KIP-848."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from groups_helpers import create_topic, wait_until

from riverbed.testing.embedded import EmbeddedBroker

MEMBER = Path(__file__).with_name("group_member.py")
SESSION_TIMEOUT_S = 6.0


class Member:
    def __init__(self, bootstrap: str, protocol: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(MEMBER), bootstrap, "g", "t", protocol],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[list[int]] = queue.Queue()
        self.assignment: list[int] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def refresh(self) -> list[int]:
        while not self.lines.empty():
            self.assignment = self.lines.get_nowait()
        return self.assignment


def covers(members: list[Member], partitions: int) -> bool:
    owned = [m.refresh() for m in members]
    return all(owned) and sorted(p for ps in owned for p in ps) == list(range(partitions))


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_killed_members_partitions_move_to_the_others(
    broker: EmbeddedBroker, protocol: str
) -> None:
    create_topic(broker.bootstrap_servers, "t", 6)
    members = [Member(broker.bootstrap_servers, protocol) for _ in range(3)]
    try:
        wait_until(lambda: covers(members, 6), 30, "three members sharing six partitions")
        victim, survivors = members[0], members[1:]
        orphaned = set(victim.refresh())
        os.kill(victim.proc.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        wait_until(
            lambda: covers(survivors, 6), SESSION_TIMEOUT_S + 10, "the survivors to take over"
        )
        elapsed = time.monotonic() - killed_at
        assert orphaned <= {p for m in survivors for p in m.assignment}
        assert elapsed < SESSION_TIMEOUT_S + 6, f"took {elapsed:.1f}s"
    finally:
        for m in members:
            m.proc.kill()
            m.proc.wait(10)
