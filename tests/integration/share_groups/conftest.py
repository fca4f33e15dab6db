"""Fixtures of the share group tests: a ``riverbed broker`` child process (killable with
SIGKILL) with a short record lock (:data:`share_helpers.BROKER_CONFIG`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from share_helpers import BROKER_CONFIG

from riverbed.testing.broker_process import BrokerProcess, free_port


@pytest.fixture
def share_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(
        tmp_path / "data", free_port(), tmp_path / "broker.log", BROKER_CONFIG, "INFO"
    )
    broker.start(timeout_s=120)
    try:
        yield broker
    finally:
        broker.close()
