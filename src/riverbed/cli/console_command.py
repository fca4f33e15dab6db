"""``riverbed console``: the web console (docs/console.md) in the foreground.

    riverbed console [--bootstrap-server HOST:PORT] [--listen HOST:PORT]
                     [--pipeline-metrics URL]... [--sample-interval SECONDS]
                     [-X KEY=VALUE]...   (librdkafka settings: TLS, SASL, ...)

Serves http://HOST:PORT/ (default 127.0.0.1:8080) until Ctrl-C or SIGTERM.  The cluster
need not be up when the console starts: pages show an error banner until it answers.
A bad ``--listen`` or a port in use is one line on stderr and exit 2.
"""

from __future__ import annotations

import click

from riverbed.cli.kafka_admin import bootstrap_option, client_config, property_option
from riverbed.errors import ConfigError


@click.command("console")
@bootstrap_option
@click.option(
    "--listen",
    default="127.0.0.1:8080",
    show_default=True,
    metavar="HOST:PORT",
    help="Where the console's HTTP server listens.",
)
@click.option(
    "--pipeline-metrics",
    "pipeline_urls",
    multiple=True,
    metavar="URL",
    help="A pipeline's Prometheus endpoint, e.g. http://127.0.0.1:9405/metrics (repeatable).",
)
@click.option(
    "--sample-interval",
    type=float,
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="How often high watermarks are sampled for the throughput charts.",
)
@property_option
def console_command(
    bootstrap: str,
    listen: str,
    pipeline_urls: tuple[str, ...],
    sample_interval: float,
    properties: tuple[str, ...],
) -> None:
    """Serve the web console: topics, messages, groups, transactions, throughput, CDC and
    pipelines, for any Kafka cluster."""
    from riverbed.console.server import bind, parse_listen, serve

    if sample_interval <= 0:
        raise ConfigError("--sample-interval must be positive")
    host, port = parse_listen(listen)
    client_config(bootstrap, properties)  # a malformed -X: one line before binding
    sock = bind(host, port)
    click.echo(f"riverbed console: http://{host}:{port}/ (cluster {bootstrap})", err=True)
    serve(bootstrap, host, port, pipeline_urls, sample_interval, sock=sock, properties=properties)
