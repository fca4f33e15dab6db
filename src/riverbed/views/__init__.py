"""Derived views kept up to date from changelog topics, idempotent under replay.

The public surface: :class:`Change`, :class:`View` (the protocol), the three stores
(:class:`~riverbed.views.search.SearchView` -- SQLite FTS5,
:class:`~riverbed.views.cache.CacheView` -- Redis,
:class:`~riverbed.views.analytics.AnalyticsView` -- DuckDB/Parquet, imported lazily so
that the ``views`` extra is needed only for the store used), :func:`open_view`, and the
drivers :func:`run_views` (consumer loop) and :func:`foreach_batch` (Spark).
See docs/views.md.
"""

from __future__ import annotations

from riverbed.views.change import Change, View, ViewError, decode_record
from riverbed.views.driver import foreach_batch, run_views
from riverbed.views.spec import open_view

__all__ = [
    "Change",
    "View",
    "ViewError",
    "decode_record",
    "foreach_batch",
    "open_view",
    "run_views",
]
