"""The ``riverbed`` command line.

User mistakes (bad flags, bad config, unreachable files) end as a one-line message on
stderr and exit code 2; any other :class:`~riverbed.errors.RiverbedError` exits 1 with
its message.  Tracebacks are for bugs only.
"""

from __future__ import annotations

import sys

import click

from riverbed import __version__
from riverbed.errors import ConfigError, RiverbedError


class _Group(click.Group):
    """A click group that turns RiverbedError into a one-line message and exit code."""

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


def main() -> None:
    """Console-script entry point."""
    from riverbed.cli import commands  # noqa: F401  (registers subcommands)
    from riverbed.cli.acls_command import acls
    from riverbed.cli.cdc_command import cdc
    from riverbed.cli.completion_command import completion_command
    from riverbed.cli.console_command import console_command
    from riverbed.cli.consume_command import consume_command
    from riverbed.cli.demo_command import demo_command
    from riverbed.cli.groups_command import groups
    from riverbed.cli.pipeline_command import pipeline
    from riverbed.cli.produce_command import produce_command
    from riverbed.cli.quotas_command import quotas
    from riverbed.cli.share_groups_command import share_groups
    from riverbed.cli.topics_command import topics
    from riverbed.cli.transactions_command import transactions
    from riverbed.cli.users_command import users
    from riverbed.cli.views_command import views
    from riverbed.cli.webhook_command import webhook_command

    cli.add_command(groups)
    cli.add_command(topics)
    cli.add_command(users)
    cli.add_command(quotas)
    cli.add_command(acls)
    cli.add_command(transactions)
    cli.add_command(produce_command)
    cli.add_command(consume_command)
    cli.add_command(completion_command)
    cli.add_command(demo_command)
    cli.add_command(cdc)
    cli.add_command(webhook_command)
    cli.add_command(share_groups)
    cli.add_command(pipeline)
    cli.add_command(console_command)
    cli.add_command(views)
    cli(prog_name="riverbed")  # also names click's completion variable: _RIVERBED_COMPLETE
