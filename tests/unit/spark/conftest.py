"""Spark's pure parts (planning, options, data-loss rule, file sinks): no SparkSession, no
broker.  Importing ``riverbed.spark`` imports pyspark, an optional extra: skip without it."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
