"""The ``debezium``-marked differential runs (minutes) run only when selected with
``-m debezium``; the reduced form runs in the default suite."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "debezium" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="long Debezium differential: select with -m debezium")
    for item in items:
        if "debezium" in item.keywords and "cdc_debezium" in str(item.fspath):
            item.add_marker(skip)
