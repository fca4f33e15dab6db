"""Small Java programs the tests run (Kafka Streams, Debezium, a share consumer): built once
from a Maven project with plain ``javac``/``jar`` and cached.

The builder moved to :mod:`riverbed.javabuild` (product code builds the ``riverbed-jvm``
Spark reader with it); this module keeps its names for the test helpers.
"""

from __future__ import annotations

from riverbed.javabuild import JavaAppBuild, JavaAppError, build_java_app

__all__ = ["JavaAppBuild", "JavaAppError", "build_java_app"]
