"""Fixtures shared by the Java share group tests: the broker each test runs against.

``riverbed_bootstrap``: a ``riverbed broker`` process (:class:`BrokerProcess`, WARNING log)
with the test module's ``RIVERBED_CONFIG`` settings, stopped at teardown.
``kafka_bootstrap``: Apache Kafka with share groups
(:func:`riverbed.testing.kafka_share_reference.share_kafka`), its record lock the test
module's ``LOCK_MS`` when it defines one (else share_kafka's default); skips without
``java``/``mvn``.  Both yield ``HOST:PORT``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.testing.broker_process import BrokerProcess, free_port
from riverbed.testing.kafka_share_reference import DEFAULT_LOCK_DURATION_MS, share_kafka


@pytest.fixture
def riverbed_bootstrap(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    config = request.module.RIVERBED_CONFIG
    broker = BrokerProcess(
        tmp_path / "data", free_port(), tmp_path / "broker.log", config, "WARNING"
    )
    broker.start(timeout_s=120)
    try:
        yield broker.bootstrap_servers
    finally:
        broker.close()


@pytest.fixture
def kafka_bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    lock_ms = getattr(request.module, "LOCK_MS", DEFAULT_LOCK_DURATION_MS)
    with share_kafka(lock_duration_ms=lock_ms) as broker:
        yield broker.bootstrap_servers
