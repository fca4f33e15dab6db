"""Subcommands of ``riverbed``, registered on import by :func:`riverbed.cli.main.main`."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

import click

from riverbed.broker.config import BrokerConfig, load_properties, parse_key_value
from riverbed.cli.main import cli
from riverbed.errors import BrokerStopError, ConfigError

EXIT_UNCLEAN_STOP = 3
"""``riverbed broker`` stopped, but could not close every partition cleanly (disk full)."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _parse_log_level(text: str) -> str:
    level = text.strip().upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"--log-level expects one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return level


def _parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port_text = listen.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"--listen expects HOST:PORT, got {listen!r}")
    return host.strip("[]") or "0.0.0.0", int(port_text)


@cli.command("broker")
@click.option(
    "--data-dir",
    "data_dir_text",
    required=True,
    metavar="DIR",
    help="Directory holding the logs and metadata (created if missing).",
)
@click.option(
    "--listen",
    default="127.0.0.1:9092",
    show_default=True,
    help="HOST:PORT to bind (PLAINTEXT), unless the config sets Kafka's listeners.",
)
@click.option(
    "--config-file",
    type=click.Path(path_type=Path),
    help="Kafka server.properties file (Java properties format).",
)
@click.option(
    "--config",
    "config_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A Kafka broker or topic-default setting; repeatable; wins over --config-file.",
)
@click.option(
    "--log-level",
    default="INFO",
    show_default=True,
    help="Python logging level: " + ", ".join(LOG_LEVELS) + ".",
)
@click.option(
    "--metrics-listen",
    metavar="HOST:PORT",
    help="Serve Prometheus metrics at http://HOST:PORT/metrics (setting metrics.listen).",
)
@click.option(
    "--console",
    "console_listen",
    metavar="HOST:PORT",
    help="Also serve the web console at http://HOST:PORT/ (docs/console.md).",
)
def broker_command(
    data_dir_text: str,
    listen: str,
    config_file: Path | None,
    config_items: tuple[str, ...],
    log_level: str,
    metrics_listen: str | None,
    console_listen: str | None = None,
) -> None:
    """Run a Kafka-protocol broker in the foreground (Ctrl-C or SIGTERM stop it cleanly).

    Exit codes: 0 stopped cleanly; 1 could not start (data dir, another broker on it);
    2 bad flag or setting, port in use; 3 stopped, but a full or failing disk kept some
    partitions from closing cleanly (one ERROR line names it; they recover at next start).
    """
    from riverbed.broker import allocator
    from riverbed.broker.server import Broker, new_event_loop
    from riverbed.storage import preallocate
    from riverbed.storage.flusher import tune_switch_interval

    if not data_dir_text.strip():
        raise ConfigError("--data-dir must name a directory (got an empty path)")
    data_dir = Path(data_dir_text)
    props: dict[str, str] = {}
    if config_file is not None:
        props.update(load_properties(config_file))
    for item in config_items:
        key, value = parse_key_value(item)
        props[key] = value
    if metrics_listen is not None:  # docs/metrics.md
        props["metrics.listen"] = metrics_listen
    config = BrokerConfig.from_props(props)
    listen_given = click.get_current_context().get_parameter_source("listen")
    if config.listeners and listen_given is not click.core.ParameterSource.DEFAULT:
        raise ConfigError(
            "give the address either with --listen or with the listeners setting, not both"
        )
    host, port = _parse_listen(listen)
    level = _parse_log_level(log_level)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    allocator.tune()  # fetch buffers reused, not faulted in afresh per response
    tune_switch_interval()  # fsync helpers get the GIL back from a busy loop sooner
    preallocate.configure(config.zero_window_bytes, config.zero_window_total_bytes)  # broker.md
    loop = new_event_loop()
    try:
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        broker = Broker(data_dir, config, host=host, port=port)
        if console_listen is not None:  # docs/console.md: own port, daemon thread and loop
            from riverbed.console.server import start_for_broker

            start_for_broker(console_listen, config, host, port)
        loop.run_until_complete(broker.serve_until(stop))
    except BrokerStopError as exc:
        logging.getLogger("riverbed.broker.server").error("%s", exc)
        sys.exit(EXIT_UNCLEAN_STOP)
    finally:
        loop.close()
