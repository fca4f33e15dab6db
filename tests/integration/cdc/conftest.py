"""Fixtures for the CDC tests: one embedded broker per module (connectors are separate
processes that reach it over the wire, as they would reach any Kafka cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path_factory.mktemp("cdc-broker")) as embedded:
        yield embedded


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "app.db"
