"""``riverbed webhook``: push a share group's records to an HTTP endpoint, one POST each.

    riverbed webhook --bootstrap-server HOST:PORT --group G --topic T --url URL
        [--concurrency 4] [--timeout 10] [--max-attempts 5] [--secret S | --secret-env VAR]
        [--retry-backoff-ms 500] [-X KEY=VALUE ...]

A share-group consumer (:mod:`riverbed.queue`) with ``--concurrency`` workers, so at most
that many requests are in flight.  The request format (body = record value, the
``X-Riverbed-*`` headers, the ``X-Riverbed-Signature: sha256=<hex>`` HMAC over
``<X-Riverbed-Timestamp>.<body>``) and the outcome of each HTTP status are documented in
:mod:`riverbed.queue.webhook`: 2xx ACCEPT; 5xx, 408, 429, timeouts and connection errors
RELEASE after a backoff (retried, delivery count + 1) until ``--max-attempts``, then REJECT;
other 4xx REJECT at once (dead letters where the group has them).

Runs in the foreground until SIGTERM or SIGINT, then finishes in-flight requests,
acknowledges, leaves the group and exits 0.  One line per delivery on stdout::

    accept|release|reject TOPIC PARTITION OFFSET delivery=N DETAIL

(DETAIL: the HTTP status, or the error).  Works against any Kafka cluster with share
groups (Apache Kafka 4.2+, Riverbed).  The share group starts where the group config
``share.auto.offset.reset`` says (latest by default).
"""

from __future__ import annotations

import os
import threading

import click

from riverbed.cli.kafka_admin import bootstrap_option, check_reachable, client_config
from riverbed.cli.kafka_admin import property_option as _property_option
from riverbed.errors import ConfigError
from riverbed.queue import Delivery, Outcome, QueueWorkers, WorkerSettings
from riverbed.queue.webhook import WebhookHandler


def _secret(secret: str | None, secret_env: str | None) -> bytes | None:
    if secret is not None and secret_env is not None:
        raise ConfigError("give --secret or --secret-env, not both")
    if secret_env is not None:
        value = os.environ.get(secret_env)
        if not value:
            raise ConfigError(f"--secret-env {secret_env}: the variable is not set")
        return value.encode()
    return None if secret is None else secret.encode()


@click.command("webhook")
@bootstrap_option
@click.option("--group", required=True, help="The share group to consume as.")
@click.option("--topic", "topics", required=True, multiple=True, help="Topic (repeatable).")
@click.option("--url", required=True, help="The endpoint each record is POSTed to.")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 256))
@click.option(
    "--timeout", "timeout_s", default=10.0, show_default=True, type=click.FloatRange(0.001)
)
@click.option(
    "--max-attempts",
    default=5,
    show_default=True,
    type=click.IntRange(1),
    help="Deliveries before a failing record is REJECTed (the broker's limit also applies).",
)
@click.option("--retry-backoff-ms", default=500, show_default=True, type=click.IntRange(0))
@click.option("--secret", default=None, help="HMAC-SHA256 key (prefer --secret-env).")
@click.option("--secret-env", default=None, metavar="VAR", help="Read the HMAC key from VAR.")
@_property_option
def webhook_command(
    bootstrap: str,
    group: str,
    topics: tuple[str, ...],
    url: str,
    concurrency: int,
    timeout_s: float,
    max_attempts: int,
    retry_backoff_ms: int,
    secret: str | None,
    secret_env: str | None,
    properties: tuple[str, ...],
) -> None:
    """POST each record of a share group to URL; ACCEPT on 2xx, retry 5xx, REJECT 4xx."""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--url {url!r} is not an http:// or https:// URL")
    key = _secret(secret, secret_env)
    check_reachable(bootstrap)
    extra = client_config(bootstrap, properties)
    extra.pop("logger", None)  # the queue workers route librdkafka's logs themselves
    settings = WorkerSettings(
        bootstrap_servers=bootstrap,
        group_id=group,
        topics=topics,
        concurrency=concurrency,
        max_attempts=max_attempts,
        retry_backoff_ms=retry_backoff_ms,
        retry_backoff_max_ms=max(retry_backoff_ms, 30_000),
        client_config=extra,
    )
    echo_lock = threading.Lock()

    def report(delivery: Delivery, outcome: Outcome, detail: str) -> None:
        line = (
            f"{outcome.value} {delivery.topic} {delivery.partition} {delivery.offset} "
            f"delivery={delivery.delivery_count} {detail}"
        )
        with echo_lock:
            click.echo(line)

    with WebhookHandler(url, timeout_s=timeout_s, secret=key) as handler:
        workers = QueueWorkers(settings, handler, on_outcome=report)
        click.echo(
            f"riverbed webhook: {','.join(topics)} (share group {group}) -> {url}, "
            f"{concurrency} workers; SIGTERM to stop",
            err=True,
        )
        workers.run()
    counts = workers.stats.snapshot()
    click.echo(
        f"riverbed webhook: stopped; accepted {counts['accept']}, released {counts['release']}, "
        f"rejected {counts['reject']}",
        err=True,
    )
