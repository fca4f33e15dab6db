"""Fixtures for the client-compatibility suite.

``kafka_reference`` (session): a real Apache Kafka broker, jars from Maven Central (cached
under ~/.cache/riverbed/kafka-<version>); ``kafka44`` (per module): Kafka 4.4, for modules
that compare behaviour newer than the session's reference.  ``server`` is parametrised
over the servers a scenario must pass against: the reference broker (``kafka``, marked
``kafka``) and Riverbed's own broker (``riverbed``, an :class:`EmbeddedBroker` in a
temporary dir with Kafka's default settings, like the reference).  ``-m "not kafka"``
runs Riverbed only.  ``new_topic`` makes a uniquely named topic on the current server.

``client_suites`` tests (the clients' own suites in full: many minutes each) are skipped
unless selected: ``pytest -m client_suites tests/compat`` (docs/compatibility.md).

At the end of the session the API versions every client used against the reference broker
are written to ``$RIVERBED_API_VERSIONS_OUT`` (JSON) when that variable is set.

With ``$RIVERBED_COMPAT_RESULTS`` set to a directory, each scenario's outcome per broker
and each client suite's per-test outcomes (``record_suite``) are written there as JSON when
the session ends, for docs/compatibility.md's table (``scripts/compat_table.py``;
:mod:`riverbed.testing.compat_table`).  Unset (the default), nothing is written.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing.compat_recording import (  # noqa: F401  (hooks for this directory)
    pytest_runtest_makereport,
    pytest_sessionfinish,
)
from riverbed.testing.compat_table import RECORDER
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.kafka_reference import KafkaReference
from riverbed.testing.scenarios.admin import create_topic
from riverbed.testing.scenarios.java import JavaClient

JAVA_SOURCE = Path(__file__).parent / "java" / "ClientScenario.java"

SERVERS = [
    pytest.param("kafka_reference", marks=pytest.mark.kafka, id="kafka"),
    pytest.param("riverbed_broker", id="riverbed"),
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``client_suites`` tests run only when selected with ``-m client_suites``."""
    if "client_suites" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="a client's whole suite: select with -m client_suites")
    for item in items:
        if "client_suites" in item.keywords:
            item.add_marker(skip)


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not on PATH")


@pytest.fixture(scope="session")
def kafka_reference() -> Iterator[KafkaReference]:
    for tool in ("java", "mvn"):
        _need(tool)
    broker = KafkaReference().start()
    try:
        yield broker
    finally:
        out = os.environ.get("RIVERBED_API_VERSIONS_OUT")
        if out:
            Path(out).write_text(json.dumps(broker.api_versions_used("riverbed-compat"), indent=1))
        broker.stop()


@pytest.fixture(scope="module")
def kafka44() -> Iterator[KafkaReference]:
    """A Kafka 4.4 reference for one module, for behaviour newer than the session's
    reference (4.1): GROUP configs, KIP-1251's assignment epochs.  Module-scoped, so that
    no second JVM stays up for the whole session."""
    for tool in ("java", "mvn"):
        _need(tool)
    with KafkaReference(version="4.4.0") as broker:
        yield broker


@pytest.fixture(
    params=[
        pytest.param("kafka44", marks=pytest.mark.kafka, id="kafka"),
        pytest.param("riverbed_broker", id="riverbed"),
    ]
)
def server44(request: pytest.FixtureRequest) -> Any:
    """Kafka 4.4 (``kafka44``) or Riverbed (the session's broker), for the modules that
    compare behaviour newer than the session's reference."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def riverbed_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    # Kafka's defaults, as the reference runs with none overridden that matter here.
    with EmbeddedBroker(tmp_path_factory.mktemp("riverbed-compat")) as broker:
        yield broker


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def java_client() -> JavaClient:
    for tool in ("java", "javac", "mvn"):
        _need(tool)
    return JavaClient.build(JAVA_SOURCE)


_counter = itertools.count()


@pytest.fixture
def new_topic(server: Any, request: pytest.FixtureRequest) -> Callable[..., str]:
    """``new_topic(partitions=3, configs=None)`` -> a fresh topic name on ``server``."""

    def make(partitions: int = 3, configs: dict[str, str] | None = None) -> str:
        base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:150]
        name = f"{base}-{next(_counter)}"
        create_topic(server.bootstrap_servers, name, partitions, configs)
        return name

    return make


@pytest.fixture
def record_suite(request: pytest.FixtureRequest) -> Callable[[str, str, str, dict[str, str]], None]:
    """``record_suite(client, form, broker, outcomes)``: a client suite run's per-test
    outcomes for the compatibility table (a no-op unless ``$RIVERBED_COMPAT_RESULTS``)."""

    def record(client: str, form: str, broker: str, outcomes: dict[str, str]) -> None:
        RECORDER.suite(request.node.nodeid, client, form, broker, outcomes)

    return record
