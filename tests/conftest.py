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
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "kafka" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="duplicate Apache Kafka differential: select it with -m kafka")
    for item in items:
        if item.get_closest_marker("kafka_variant") and item.get_closest_marker("kafka"):
            item.add_marker(skip)
