"""``riverbed views run``: keep derived views (search index, cache, analytics) up to date.

Reads changelog topics (CDC or events) with a consumer and applies every batch to each
``--view`` in one local transaction per view (:mod:`riverbed.views`, docs/views.md).
Resumes where the views say, not where the group says: a fresh view is a rebuild from
offset 0.  Runs until SIGTERM/SIGINT, or with ``--stop-at-end`` until the topics are
read to the end they had at start.  Errors are one line, exit 1 (2 for a bad option).
"""

from __future__ import annotations

import threading

import click

from riverbed.cli.kafka_admin import bootstrap_option, check_reachable, client_config
from riverbed.cli.kafka_admin import property_option as _property_option
from riverbed.signals import SignalStop
from riverbed.views import View, open_view, run_views


@click.group("views")
def views() -> None:
    """Derived views kept up to date from changelog topics (docs/views.md)."""


@views.command("run")
@bootstrap_option
@click.option("--topic", "topics", required=True, multiple=True, help="Topic (repeatable).")
@click.option(
    "--view",
    "specs",
    required=True,
    multiple=True,
    help="search:PATH | redis://HOST:PORT[/DB][#PREFIX] | duckdb:PATH (repeatable).",
)
@click.option(
    "--group", default="riverbed-views", show_default=True, help="Consumer group (for lag)."
)
@click.option("--batch-size", default=500, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--stop-at-end", is_flag=True, help="Stop once the topics are read to their end.")
@_property_option
def run_command(
    bootstrap: str,
    topics: tuple[str, ...],
    specs: tuple[str, ...],
    group: str,
    batch_size: int,
    stop_at_end: bool,
    properties: tuple[str, ...],
) -> None:
    """Apply TOPIC's changes to every VIEW, idempotently (offset rule)."""
    check_reachable(bootstrap)
    extra = client_config(bootstrap, properties)
    opened: list[View] = []
    stop = threading.Event()
    SignalStop(stop).install()  # SIGTERM/SIGINT; the handlers take no lock (riverbed.signals)
    try:
        for spec in specs:
            opened.append(open_view(spec))
        click.echo(
            f"riverbed views: {','.join(topics)} -> {', '.join(specs)}; SIGTERM to stop",
            err=True,
        )
        total = run_views(
            opened,
            bootstrap,
            topics,
            group,
            stop=stop,
            stop_at_end=stop_at_end,
            batch_size=batch_size,
            client_config={k: v for k, v in extra.items() if k != "bootstrap.servers"},
        )
    finally:
        for view in opened:
            view.close()
    click.echo(f"riverbed views: stopped; {total} changes read", err=True)
