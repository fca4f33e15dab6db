"""``riverbed demo``: the main job on embedded defaults (see :mod:`riverbed.demo.runner`).

Registered by :func:`riverbed.cli.main.main`.  Exit codes: 0 done; 1 the demo failed (the
last lines of its log, then a one-line message on stderr, no traceback -- the traceback is
in the log); 2 a usage mistake; 130 Ctrl-C, after everything stopped cleanly.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from riverbed.cli.extras import require_extra


@click.command("demo")
@click.option(
    "--duration",
    default=30.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Seconds to stream page views before draining and printing the table "
    "(Spark start-up and the drain come on top: ~15 s).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Broker logs, checkpoint, analytics.sqlite and demo.log go here; an existing "
    "one is resumed.  [default: a new temporary dir, kept]",
)
@click.option(
    "--users",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Distinct users in the clickstream.",
)
@click.option(
    "--rate",
    default=200.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Page views per second.",
)
@click.option(
    "--speedup",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=0.001),
    help="Event-time seconds per wall-clock second (600: an hour every 6 s).",
)
@click.option(
    "--late-fraction",
    default=0.01,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Share of page views arriving 2 h late.",
)
@click.option(
    "--allowed-delay",
    "allowed_delay_s",
    default=600,
    show_default=True,
    type=click.IntRange(min=0),
    help="Watermark delay, event-time seconds.",
)
@click.option(
    "--partitions",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="Partitions of the demo's topics (when it creates them).",
)
@click.option(
    "--top",
    "top_rows",
    default=12,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows of the final table to print (busiest users first).",
)
@click.option(
    "--seed",
    default=7,
    show_default=True,
    type=int,
    help="Seed of the clickstream generator (same seed, same page views).",
)
@click.option(
    "--bootstrap-server",
    "bootstrap_servers",
    metavar="HOST:PORT[,HOST:PORT...]",
    help="Run on this Kafka cluster instead of an embedded Riverbed broker "
    "(see docs/scale-out.md).",
)
@click.option(
    "--master",
    metavar="SPARK_URL",
    help="Run the pipeline on this Spark master (e.g. spark://host:7077) instead of local[2].",
)
@click.option(
    "--replication-factor",
    type=click.IntRange(min=1),
    help="Replication factor of the topics the demo creates on --bootstrap-server "
    "[default: the cluster's default.replication.factor].",
)
def demo_command(
    duration: float,
    data_dir: Path | None,
    users: int,
    rate: float,
    speedup: float,
    late_fraction: float,
    allowed_delay_s: int,
    partitions: int,
    top_rows: int,
    seed: int,
    bootstrap_servers: str | None,
    master: str | None,
    replication_factor: int | None,
) -> None:
    """Run a broker, a synthetic clickstream and the page-views-per-user-per-hour pipeline.

    Starts an embedded broker, streams page views (some out of order, some late) through
    a Spark Structured Streaming query on local Spark, shows live progress and ends with
    a summary and the per-user-per-hour table.  Ctrl-C stops everything cleanly.
    With --bootstrap-server and --master it runs the same pipeline on a Kafka cluster and
    a Spark cluster instead (nothing embedded is started).
    """
    require_extra("spark", "the demo")  # pyspark, pandas, pyarrow: one line, exit 2
    if replication_factor is not None and bootstrap_servers is None:
        raise click.UsageError("--replication-factor needs --bootstrap-server")
    from riverbed.demo.logs import log_path, tail
    from riverbed.demo.runner import DemoOptions, run_demo

    options = DemoOptions(
        duration_s=duration,
        users=users,
        rate=rate,
        speedup=speedup,
        partitions=partitions,
        seed=seed,
        allowed_delay_ms=allowed_delay_s * 1000,
        late_fraction=late_fraction,
        top_rows=top_rows,
        bootstrap_servers=bootstrap_servers,
        master=master,
        replication_factor=replication_factor,
    )
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="riverbed-demo-"))
    log = log_path(data_dir)
    try:
        run_demo(options, data_dir)
    except KeyboardInterrupt:
        click.echo(
            f"riverbed demo: interrupted; broker, clickstream and Spark stopped (log: {log})",
            err=True,
        )
        sys.exit(130)
    except Exception as exc:
        lines = tail(log)
        if lines:
            click.echo(f"last lines of {log}:", err=True)
            for line in lines:
                click.echo(f"  {line[:200]}", err=True)
        click.echo(f"riverbed demo: error: {_one_line(exc)}", err=True)
        sys.exit(1)


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = next((s.strip() for s in str(exc).splitlines() if s.strip()), "")
    text = text or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
