"""The Apache Kafka variants of the event-sourcing tests (``kafka`` marker: they start a
JVM broker, a minute or more on a loaded machine) run only when asked for with
``-m kafka``; the default suite runs the same scenarios against Riverbed."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "kafka" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="Apache Kafka variant: select it with -m kafka")
    for item in items:
        if item.path.is_relative_to(HERE) and item.get_closest_marker("kafka") is not None:
            item.add_marker(skip)
