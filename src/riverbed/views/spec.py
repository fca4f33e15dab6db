"""View specifications as the CLI takes them (``--view``).

* ``search:PATH``             :class:`~riverbed.views.search.SearchView` (SQLite FTS5)
* ``redis://HOST:PORT[/DB]``  :class:`~riverbed.views.cache.CacheView` (prefix
  ``riverbed:view``; append ``#PREFIX`` to choose another)
* ``duckdb:PATH``             :class:`~riverbed.views.analytics.AnalyticsView`
* ``tantivy:DIR``             :class:`~riverbed.views.tantivy_search.TantivySearchView`
  (optional, the ``tantivy`` extra)
"""

from __future__ import annotations

from riverbed.errors import ConfigError
from riverbed.views.change import View


def open_view(spec: str) -> View:
    """Open the view a spec names; :class:`ConfigError` for a malformed spec or a store
    whose client (the ``views`` extra: duckdb, redis) is not installed."""
    try:
        return _open(spec)
    except ModuleNotFoundError as exc:
        extra = "tantivy" if exc.name == "tantivy" else "views"
        raise ConfigError(
            f"view {spec!r} needs the {extra!r} extra (no module named {exc.name!r}): "
            f"pip install 'riverbed[{extra}]'"
        ) from None


def _open(spec: str) -> View:
    if spec.startswith("search:") and len(spec) > 7:
        from riverbed.views.search import SearchView

        return SearchView(spec[7:])
    if spec.startswith(("redis://", "rediss://", "unix://")):
        from riverbed.views.cache import CacheView

        url, _, prefix = spec.partition("#")
        return CacheView(url, prefix or "riverbed:view")
    if spec.startswith("tantivy:") and len(spec) > 8:
        from riverbed.views.tantivy_search import TantivySearchView

        return TantivySearchView(spec[8:])
    if spec.startswith("duckdb:") and len(spec) > 7:
        from riverbed.views.analytics import AnalyticsView

        return AnalyticsView(spec[7:])
    raise ConfigError(
        f"bad view {spec!r}: expected search:PATH, redis://HOST:PORT, duckdb:PATH or tantivy:DIR"
    )
