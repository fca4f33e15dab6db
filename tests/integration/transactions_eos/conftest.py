"""The ``eos_heavy`` tests (many kills, minutes each) run only when asked for with
``-m eos_heavy``; the default suite runs their reduced forms.  The marker is registered
here, next to the only tests that use it."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "eos_heavy: many application and broker kills under Kafka Streams exactly_once_v2;"
        " skipped unless selected with -m eos_heavy",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "eos_heavy" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="heavy exactly-once run: select it with -m eos_heavy")
    for item in items:
        if item.get_closest_marker("eos_heavy") is not None:
            item.add_marker(skip)
