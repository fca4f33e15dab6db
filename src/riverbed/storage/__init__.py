"""riverbed.storage: the durable partitioned log (synchronous, no networking).

Public API (everything else is private to the package)::

    LogConfig        per-topic settings, Kafka property names (config.py)
    LogManager       all logs of a data directory + flusher and maintenance threads
    PartitionLog     one partition: append / read / offsets / flush futures
    AppendResult     what an append assigned
    FetchResult      what a read returned
    FlushPolicy      per-append / interval / OS, derived from flush.messages / flush.ms

See docs/storage.md for the on-disk format and what survives a crash.
"""

from riverbed.storage.config import FlushPolicy, LogConfig
from riverbed.storage.log import AppendResult, FetchResult, PartitionLog
from riverbed.storage.manager import LogManager

__all__ = ["AppendResult", "FetchResult", "FlushPolicy", "LogConfig", "LogManager", "PartitionLog"]
