"""A three-broker Kafka 4.4 cluster (and, in the full form, a Spark standalone cluster).

Three forms:

- default suite (CI; ~1 min at load 6-9, 2-3.5 min at 15-28 here): the one test marked
  ``cluster_smoke`` -- the quick demo on the Kafka cluster (256 MB heaps) with local
  Spark, the leader of ``pageviews-0`` SIGKILLed mid-run, its table checked against the
  batch job computed in plain Python.  Every other ``cluster`` test is skipped;
- ``pytest -m cluster tests/integration/scale_out``: the same test, selected by marker;
- full (~18 min at load 25): ``RIVERBED_SCALE_OUT_FULL=1 pytest -m cluster
  tests/integration/scale_out`` adds a Spark standalone cluster (a master and two 1-core
  workers) running the demo and the ``enrich`` (fed by ``riverbed cdc sqlite``) and
  ``timeline`` examples with ``--master``, ``search-clicks`` on local Spark, each with a
  broker killed mid-run; the smoke test's demo runs 40 s and its table is also checked
  against a Spark batch job; and the MirrorMaker 2 migration of a consumer group from a
  Riverbed broker to the cluster.  Each test gets 900 s (pytest-timeout).

Each cluster starts once per session and is SIGKILLed at the end, whatever the outcome
(fixture finalizers, plus the harnesses' own ``atexit`` hooks).  A test may kill brokers
and leave them dead: the ``kafka_cluster`` fixture restarts them before the next test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from riverbed.testing.kafka_cluster import KafkaCluster
from riverbed.testing.spark_standalone import SparkStandalone

FULL = bool(os.environ.get("RIVERBED_SCALE_OUT_FULL"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``cluster`` tests (three JVMs or more, minutes) run only when selected with
    -m cluster, except ``cluster_smoke`` ones (the default suite's reduced form);
    ``full_only`` ones only with RIVERBED_SCALE_OUT_FULL=1 as well."""
    selected = "cluster" in (config.getoption("markexpr") or "")
    for item in items:
        if "cluster" not in item.keywords:
            continue
        if not selected and item.get_closest_marker("cluster_smoke") is None:
            item.add_marker(pytest.mark.skip(reason="three Kafka JVMs: select with -m cluster"))
        elif item.get_closest_marker("full_only") is not None and not FULL:
            item.add_marker(pytest.mark.skip(reason="full form: set RIVERBED_SCALE_OUT_FULL=1"))
        if item.get_closest_marker("timeout") is None:
            # a standalone-cluster run takes 3-4 min on a loaded box (the default is 300 s)
            item.add_marker(pytest.mark.timeout(900))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "full_only: scale-out test of the full form only")
    config.addinivalue_line(
        "markers", "cluster_smoke: the scale-out test the default suite runs (reduced form)"
    )


@pytest.fixture(scope="session")
def _kafka_cluster_session() -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(heap="256m")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def kafka_cluster(_kafka_cluster_session: KafkaCluster) -> KafkaCluster:
    """The session's cluster with every broker running (killed ones restarted)."""
    cluster = _kafka_cluster_session
    for node_id in cluster.node_ids:
        if not cluster.running(node_id):
            cluster.restart(node_id)
    return cluster


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkStandalone]:
    cluster = SparkStandalone()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
