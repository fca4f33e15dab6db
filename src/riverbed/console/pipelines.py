"""Spark pipelines' progress, scraped from their Prometheus endpoints.

Pipelines run in their own processes and export ``riverbed_pipeline_*`` metrics
(:mod:`riverbed.spark.metrics`, ``riverbed pipeline run --metrics-listen``).  The console is
given their URLs (``--pipeline-metrics URL``, repeatable) and reads them with
:func:`scrape` on a worker thread: one GET per URL with a timeout, parsed with
prometheus-client's text parser.  Blocking; thread-safe (no shared state).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

PREFIX = "riverbed_pipeline_"

SHOWN = (
    "active",
    "batches_total",
    "batch_id",
    "input_rows_total",
    "input_rows_per_second",
    "processed_rows_per_second",
    "watermark_seconds",
    "state_rows",
)
"""Sample names (without :data:`PREFIX`) shown per query, in this order."""


@dataclass(frozen=True, slots=True)
class QueryProgress:
    """One streaming query of one pipeline endpoint: ``{metric: value}`` (see :data:`SHOWN`;
    ``state_rows`` summed over operators)."""

    url: str
    query: str
    values: dict[str, float]


@dataclass(frozen=True, slots=True)
class Scrape:
    """One endpoint: its queries, or the one-line error that kept it from being read."""

    url: str
    queries: tuple[QueryProgress, ...]
    error: str | None = None


def scrape(url: str, timeout_s: float = 5.0) -> Scrape:
    """Read ``url`` (a ``/metrics`` endpoint) and group its pipeline samples per query."""
    try:
        response = httpx.get(url, timeout=timeout_s)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        return Scrape(url, (), f"cannot scrape {url}: {exc}")
    per_query: dict[str, dict[str, float]] = {}
    try:
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                if not sample.name.startswith(PREFIX):
                    continue
                name = sample.name[len(PREFIX) :]
                if name not in SHOWN or "query" not in sample.labels:
                    continue
                values = per_query.setdefault(sample.labels["query"], {})
                values[name] = values.get(name, 0.0) + sample.value
    except ValueError as exc:
        return Scrape(url, (), f"{url} is not Prometheus text: {exc}")
    return Scrape(url, tuple(QueryProgress(url, q, v) for q, v in sorted(per_query.items())), None)
