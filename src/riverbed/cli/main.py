"""The ``riverbed`` command line.

User mistakes (bad flags, bad config, unreachable files) end as a one-line message on
stderr and exit code 2; any other :class:`~riverbed.errors.RiverbedError` exits 1 with
its message.  Tracebacks are for bugs only.
"""

from __future__ import annotations

import importlib
import sys

import click

from riverbed import __version__
from riverbed.errors import ConfigError, RiverbedError


class _Group(click.Group):
    """A click group that turns RiverbedError into a one-line message and exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            command = _lazy_command(cmd_name)
            if command is not None:
                self.add_command(command, cmd_name)
        return command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            click.echo(f"riverbed: error: {exc}", err=True)
            sys.exit(2)
        except RiverbedError as exc:
            click.echo(f"riverbed: error: {exc}", err=True)
            sys.exit(1)
        except ModuleNotFoundError as exc:  # an optional extra (pyspark, ...) not installed
            from riverbed.cli.extras import missing_extra

            missing = missing_extra(exc.name or "")
            if missing is None:
                raise
            click.echo(f"riverbed: error: {missing}", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="riverbed")
def cli() -> None:
    """Riverbed: a Kafka-protocol log broker and stream-processing toolkit for Python."""


# Subcommand name -> "module:attribute".  ``riverbed broker`` imports only the broker's
# modules: the other subcommands pull in httpx, starlette, jinja2, pygments, pyspark ...,
# which would add to every broker start (docs/benchmarks.md, start-up).  ``--help`` and
# shell completion list these names and import each command only when it is needed.
LAZY_SUBCOMMANDS: dict[str, str] = {
    "acls": "riverbed.cli.acls_command:acls",
    "broker": "riverbed.cli.commands:broker_command",
    "cdc": "riverbed.cli.cdc_command:cdc",
    "completion": "riverbed.cli.completion_command:completion_command",
    "console": "riverbed.cli.console_command:console_command",
    "consume": "riverbed.cli.consume_command:consume_command",
    "demo": "riverbed.cli.demo_command:demo_command",
    "groups": "riverbed.cli.groups_command:groups",
    "pipeline": "riverbed.cli.pipeline_command:pipeline",
    "produce": "riverbed.cli.produce_command:produce_command",
    "quotas": "riverbed.cli.quotas_command:quotas",
    "share-groups": "riverbed.cli.share_groups_command:share_groups",
    "topics": "riverbed.cli.topics_command:topics",
    "transactions": "riverbed.cli.transactions_command:transactions",
    "users": "riverbed.cli.users_command:users",
    "views": "riverbed.cli.views_command:views",
    "webhook": "riverbed.cli.webhook_command:webhook_command",
}


def _lazy_command(name: str) -> click.Command | None:
    target = LAZY_SUBCOMMANDS.get(name)
    if target is None:
        return None
    module_name, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="riverbed")  # also names click's completion variable: _RIVERBED_COMPLETE
