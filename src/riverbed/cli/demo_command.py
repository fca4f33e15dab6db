"""``riverbed demo``: the main job on embedded defaults (see :mod:`riverbed.demo.runner`).

Registered by the lead with ``cli.add_command(demo_command)``.  Ctrl-C stops everything
cleanly and exits 130 with a one-line message, no traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from riverbed.errors import ConfigError


@click.command("demo")
@click.option("--duration", default=30.0, show_default=True, type=click.FloatRange(min=1),
              help="Seconds to generate events before draining and printing the table.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the broker's logs, checkpoint and table here (default: a temp dir, "
                   "removed at the end).")
@click.option("--users", default=20, show_default=True, type=click.IntRange(min=1),
              help="Distinct users in the clickstream.")
@click.option("--rate", default=200.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Page views per second.")
@click.option("--speedup", default=600.0, show_default=True, type=click.FloatRange(min=0.001),
              help="Event-time seconds per wall-clock second (600: an hour every 6 s).")
@click.option("--late-fraction", default=0.01, show_default=True,
              type=click.FloatRange(0, 1), help="Share of events arriving 2 h late.")
@click.option("--allowed-delay", "allowed_delay_s", default=600, show_default=True,
              type=click.IntRange(min=0), help="Watermark delay, event-time seconds.")
@click.option("--partitions", default=2, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=7, show_default=True, type=int)
def demo_command(
    duration: float,
    data_dir: Path | None,
    users: int,
    rate: float,
    speedup: float,
    late_fraction: float,
    allowed_delay_s: int,
    partitions: int,
    seed: int,
) -> None:
    """Run a broker, a synthetic clickstream and the page-views-per-user-per-hour pipeline."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ConfigError("the demo needs Spark: pip install 'riverbed[spark]'") from None
    from riverbed.demo.runner import DemoOptions, run_demo

    options = DemoOptions(
        duration_s=duration,
        data_dir=data_dir,
        users=users,
        rate=rate,
        speedup=speedup,
        partitions=partitions,
        seed=seed,
        allowed_delay_ms=allowed_delay_s * 1000,
        late_fraction=late_fraction,
    )
    try:
        run_demo(options)
    except KeyboardInterrupt:
        click.echo("\nriverbed demo: interrupted; broker, generator and Spark stopped.", err=True)
        sys.exit(130)
