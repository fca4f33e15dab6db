"""``riverbed.spark.register`` checks that Spark's Python workers can import riverbed and
fails at once, with the fix, when they cannot -- here with workers really started from
another interpreter (Debian's ``/usr/bin/python3``, which has no riverbed), on the shared
session.  The session itself was registered (and checked) by the ``spark`` fixture."""

from __future__ import annotations

import os
import sys

import pytest
from pyspark.sql import SparkSession

import riverbed.spark
from riverbed.spark import SparkWorkerSetupError

OTHER_PYTHON = "/usr/bin/python3"


def test_register_checks_the_workers_and_names_the_fix(spark: SparkSession) -> None:
    assert os.path.realpath(riverbed.spark.check_workers(spark)) == os.path.realpath(sys.executable)
    if not os.path.exists(OTHER_PYTHON):
        pytest.skip(f"{OTHER_PYTHON} is needed to start workers from another interpreter")
    context = spark.sparkContext
    context.pythonExec = OTHER_PYTHON  # what PYSPARK_PYTHON unset (python3 on PATH) gives
    try:
        with pytest.raises(SparkWorkerSetupError) as raised:
            riverbed.spark.register(spark)
    finally:
        context.pythonExec = sys.executable
    message = str(raised.value)
    assert "\n" not in message
    assert f"they run '{OTHER_PYTHON}'" in message
    assert f"PYSPARK_PYTHON={sys.executable}" in message and "spark.pyspark.python" in message
    assert "No module named" in message
    riverbed.spark.register(spark)  # the session is unharmed
