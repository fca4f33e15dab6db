"""What every admin-style subcommand (``riverbed groups``, ``riverbed topics``) shares: a
``--bootstrap-server`` option, a fast reachability check, and an AdminClient that keeps
librdkafka's log lines off the terminal.

Commands talk to brokers only through confluent-kafka's AdminClient, so they work against
any Kafka cluster, not just Riverbed.  Before any request a bootstrap server must accept a
TCP connection, so an unreachable broker is reported at once ("cannot reach a broker at
HOST:PORT ...") instead of as a request timeout.  librdkafka's own log lines go to the
``riverbed.cli.kafka_client`` Python logger (silent by default).
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import click

from riverbed.errors import RiverbedError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 3.0

_client_log = logging.getLogger("riverbed.cli.kafka_client")


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
                f"--bootstrap-server {server!r} is not HOST:PORT") from None
        try:
            with socket.create_connection((host.strip("[]") or "127.0.0.1", port_number),
                                          timeout=CONNECT_TIMEOUT_S):
                return
        except OSError as exc:
            problems.append(f"{server}: {exc.strerror or exc}")
    raise BrokerUnreachableError(
        f"cannot reach a broker at {bootstrap} ({'; '.join(problems) or 'no address'}); "
        "is it running, and is --bootstrap-server right?")


def admin_client(bootstrap: str) -> Any:
    """An AdminClient for ``bootstrap`` after :func:`check_reachable`, logging to Python
    logging.  Keep a reference until every future it returned is resolved."""
    from confluent_kafka.admin import AdminClient

    check_reachable(bootstrap)
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 10_000,
        "logger": _client_log,
    }
    return AdminClient(conf)


bootstrap_option = click.option(
    "--bootstrap-server", "bootstrap", default=DEFAULT_BOOTSTRAP, show_default=True,
    metavar="HOST:PORT", help="A broker to talk to.",
)
