"""Riverbed: a stream-processing system for Python.

A log-based message broker that speaks the Apache Kafka wire protocol, queue semantics
on the same logs, change data capture, and stream processing on Spark Structured
Streaming.  See README.md.
"""

from riverbed.errors import RiverbedError

__version__ = "0.1.0"

__all__ = ["RiverbedError", "__version__"]
