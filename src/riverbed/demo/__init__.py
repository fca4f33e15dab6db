"""The ``riverbed demo`` job: a synthetic clickstream through the page-view pipeline.

:mod:`riverbed.demo.clickstream` (generator, no pyspark), :mod:`riverbed.demo.progress`
(formatting), :mod:`riverbed.demo.runner` (the lifecycle).  Importing this package does
not import pyspark; :func:`riverbed.demo.runner.run_demo` does, when it starts Spark.
"""
