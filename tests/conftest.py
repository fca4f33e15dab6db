"""Suite-wide gate of the duplicate Apache Kafka differentials (``kafka_variant`` marker).

Many integration tests are parametrised over two brokers, ``riverbed`` and ``kafka`` (the
Apache Kafka reference, marked ``kafka``): the Kafka run proves the test's expectations are
Kafka's own.  Once one such differential per area runs in the default suite, the others
mostly re-prove the same thing at the cost of a JVM broker and its (long) timeouts.  A test
marked ``kafka_variant`` keeps its Riverbed run in the default suite; its ``kafka`` run is
skipped unless the ``-m`` expression names ``kafka``::

    pytest -m kafka                      # every Apache Kafka variant, gated ones included
    pytest -m kafka tests/integration/queue

(``-m kafka_variant`` would select the Riverbed runs of those tests as well.)  Directories
with a gate of their own (e.g. ``tests/integration/eventsourcing``) keep it.

It also schedules ``scripts/test``'s two pytest-xdist workers (``-n 2 --dist loadgroup``,
docs/testing.md "Two workers"): :func:`pytest_xdist_make_scheduler` sends every test of
one module to one worker, so a module's fixtures (its brokers, its Kafka reference) start
once, as in a serial run, and every module of :data:`SPARK_GROUP` to the same worker, so
that worker holds the one SparkSession (a JVM of its own, ``local[2]``) and the other
never starts a second.  (xdist's ``xdist_group`` marks cannot do this under pytest 9.2,
whose node ids xdist 3.8 can no longer rename.)  Collection fails if a test that uses a
``spark`` fixture is outside :data:`SPARK_GROUP`.
"""

from __future__ import annotations

from typing import Any

import pytest

SPARK_GROUP = (
    "tests/integration/spark/",
    "tests/integration/pipelines_joins/",
    "tests/integration/pipelines_ops/",
    "tests/integration/pipelines_time/",
    "tests/integration/pipeline/test_pageviews_stream.py",
    "tests/integration/views/test_views_spark.py",
    "tests/integration/metrics/test_pipeline_metrics.py",  # builds its own session
)
"""The modules (or folders) whose tests run in this pytest process's SparkSession."""


def worker_group(nodeid: str) -> str:
    """The unit of work a worker takes whole: ``spark`` for the modules of
    :data:`SPARK_GROUP`, else the test's module path."""
    module = nodeid.split("::", 1)[0]
    return "spark" if module.startswith(SPARK_GROUP) else module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``: xdist's scope scheduler with :func:`worker_group` as
    the scope (largest units first); other ``--dist`` modes are xdist's own."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleAndSparkScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return ModuleAndSparkScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    outside = sorted(
        {
            item.nodeid.split("::", 1)[0]
            for item in items
            if "spark" in getattr(item, "fixturenames", ()) and worker_group(item.nodeid) != "spark"
        }
    )
    if outside:
        raise pytest.UsageError(
            f"{', '.join(outside)} use a SparkSession: add them to SPARK_GROUP in tests/conftest.py"
        )
    if "kafka" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="duplicate Apache Kafka differential: select it with -m kafka")
    for item in items:
        if item.get_closest_marker("kafka_variant") and item.get_closest_marker("kafka"):
            item.add_marker(skip)
