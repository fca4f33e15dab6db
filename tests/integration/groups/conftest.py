"""The ``broker`` fixture of the consumer-group tests: an embedded broker tuned for fast
rebalances (see :data:`groups_helpers.BROKER_CONFIG`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from groups_helpers import BROKER_CONFIG

from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data", BROKER_CONFIG) as running:
        yield running
