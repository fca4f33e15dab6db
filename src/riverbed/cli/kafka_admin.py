"""What every subcommand that talks to Kafka (``riverbed groups``, ``topics``, ``produce``,
``consume``) shares: a ``--bootstrap-server`` option, a fast reachability check, client
settings that keep librdkafka's log lines off the terminal, and ``--output text|json``.

``--bootstrap-server`` defaults to the ``RIVERBED_BOOTSTRAP_SERVER`` environment variable,
then ``127.0.0.1:9092``.  ``--output json`` prints one JSON document (``json.dumps`` with
sorted keys) followed by a newline instead of the text rows.

Commands talk to brokers only through confluent-kafka's AdminClient, so they work against
any Kafka cluster, not just Riverbed.  Before any request a bootstrap server must accept a
TCP connection, so an unreachable broker is reported at once ("cannot reach a broker at
HOST:PORT ...") instead of as a request timeout.  librdkafka's own log lines go to the
``riverbed.cli.kafka_client`` Python logger (silent by default).
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterable
from typing import Any

import click

from riverbed.errors import ConfigError, RiverbedError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
BOOTSTRAP_ENV = "RIVERBED_BOOTSTRAP_SERVER"
TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 3.0

_client_log = logging.getLogger("riverbed.cli.kafka_client")
_client_log.addHandler(logging.NullHandler())  # not Python's last-resort stderr handler


class BrokerUnreachableError(RiverbedError):
    """No bootstrap server accepted a connection, or the option is malformed."""


def check_reachable(bootstrap: str) -> None:
    """Fail fast with a clear message when no bootstrap server accepts a TCP connection
    (librdkafka would otherwise retry quietly until the request times out)."""
    problems = []
    for server in (s.strip() for s in bootstrap.split(",") if s.strip()):
        host, _, port = server.rpartition(":")
        try:
            port_number = int(port)
        except ValueError:
            raise BrokerUnreachableError(
                f"--bootstrap-server {server!r} is not HOST:PORT"
            ) from None
        try:
            with socket.create_connection(
                (host.strip("[]") or "127.0.0.1", port_number), timeout=CONNECT_TIMEOUT_S
            ):
                return
        except OSError as exc:
            problems.append(f"{server}: {exc.strerror or exc}")
    raise BrokerUnreachableError(
        f"cannot reach a broker at {bootstrap} ({'; '.join(problems) or 'no address'}); "
        "is it running, and is --bootstrap-server right?"
    )


def client_config(bootstrap: str, properties: Iterable[str] = ()) -> dict[str, Any]:
    """librdkafka settings for any client: ``bootstrap.servers``, logs routed to Python
    logging, then ``KEY=VALUE`` ``properties`` (``--property``/``-X``), which win."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 10_000,
        "logger": _client_log,
    }
    for item in properties:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--property {item!r} is not KEY=VALUE")
        conf[key.strip()] = value
    return conf


def admin_client(bootstrap: str) -> Any:
    """An AdminClient for ``bootstrap`` after :func:`check_reachable`, logging to Python
    logging.  Keep a reference until every future it returned is resolved."""
    from confluent_kafka.admin import AdminClient

    check_reachable(bootstrap)
    return AdminClient(client_config(bootstrap))


def echo_json(document: object) -> None:
    """Print ``document`` as one JSON line (``--output json``)."""
    click.echo(json.dumps(document, sort_keys=True))


bootstrap_option = click.option(
    "--bootstrap-server",
    "bootstrap",
    default=DEFAULT_BOOTSTRAP,
    show_default=True,
    envvar=BOOTSTRAP_ENV,
    show_envvar=True,
    metavar="HOST:PORT",
    help="A broker to talk to (comma-separated for several).",
)

output_option = click.option(
    "--output",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Text rows, or one JSON document.",
)

property_option = click.option(
    "--property",
    "-X",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A librdkafka client setting, e.g. -X security.protocol=SSL (repeatable).",
)
