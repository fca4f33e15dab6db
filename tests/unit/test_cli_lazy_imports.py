"""``riverbed broker`` starts without importing the other subcommands' heavy modules.

The CLI resolves subcommands lazily (``riverbed.cli.main.LAZY_SUBCOMMANDS``) and the broker
imports prometheus_client only when ``metrics.listen`` is set: both keep the fresh start
short (docs/benchmarks.md).  Each check runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys

import click

from riverbed.cli.main import LAZY_SUBCOMMANDS, _lazy_command, cli

HEAVY = ("prometheus_client", "httpx", "starlette", "jinja2", "pyspark", "duckdb", "pygments")

PROBE = """
import sys
from click.testing import CliRunner
from riverbed.cli.main import cli
import riverbed.broker.server
result = CliRunner().invoke(cli, ["broker", "--help"])
assert result.exit_code == 0, result.output
print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_every_lazy_subcommand_resolves_to_its_command() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(LAZY_SUBCOMMANDS)
    for name in LAZY_SUBCOMMANDS:
        command = _lazy_command(name)
        assert isinstance(command, click.Command)
        assert cli.get_command(ctx, name) is command
    assert cli.get_command(ctx, "no-such-command") is None


def test_broker_path_imports_no_heavy_module() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    ).stdout.split()
    assert [m for m in HEAVY if m in out] == []
