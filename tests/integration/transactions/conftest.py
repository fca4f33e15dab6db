"""Fixtures for the transaction tests: an embedded broker on a temporary data dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data") as embedded:
        yield embedded
