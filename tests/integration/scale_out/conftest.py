"""A three-broker Kafka 4.4 cluster (and, in the full form, a Spark standalone cluster).

The ``cluster`` marker selects these tests: they are skipped unless ``-m cluster`` is
given.  Two forms:

- reduced (CI, 2-3.5 min here, by load): ``pytest -m cluster tests/integration/scale_out``
  -- the demo on the Kafka cluster with local Spark and one broker killed mid-run;
- full (~10 min): ``RIVERBED_SCALE_OUT_FULL=1 pytest -m cluster tests/integration/scale_out``
  adds the demo on a Spark standalone cluster (a master and two 1-core workers), the
  ``search-clicks`` example, both with a broker killed, and the MirrorMaker 2 migration of
  a consumer group from a Riverbed broker to the cluster.

Each cluster starts once per session and is SIGKILLed at the end, whatever the outcome
(fixture finalizers, plus the harnesses' own ``atexit`` hooks).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from riverbed.testing.kafka_cluster import KafkaCluster

FULL = bool(os.environ.get("RIVERBED_SCALE_OUT_FULL"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``cluster`` tests (four JVMs or more, minutes) run only when selected with -m cluster;
    ``full`` ones only with RIVERBED_SCALE_OUT_FULL=1 as well."""
    selected = "cluster" in (config.getoption("markexpr") or "")
    for item in items:
        if "cluster" not in item.keywords:
            continue
        if not selected:
            item.add_marker(pytest.mark.skip(reason="three Kafka JVMs: select with -m cluster"))
        elif item.get_closest_marker("full_only") is not None and not FULL:
            item.add_marker(pytest.mark.skip(reason="full form: set RIVERBED_SCALE_OUT_FULL=1"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "full_only: scale-out test of the full form only")


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[KafkaCluster]:
    cluster = KafkaCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
