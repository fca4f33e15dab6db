"""The ``kafka_connect``-marked runs (minutes: exactly-once, repeated SIGKILLs of the worker)
run only when selected with ``-m kafka_connect``; the short scenario runs in the default
suite."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "kafka_connect" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="long Kafka Connect runs: select with -m kafka_connect")
    for item in items:
        if item.get_closest_marker("kafka_connect") is not None:
            item.add_marker(skip)
