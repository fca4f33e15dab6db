"""The pipelines' pure parts (watermark rule, store, demo display): no SparkSession, no
broker.  The store imports ``riverbed.spark`` and so pyspark, an optional extra: skip
without it."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
