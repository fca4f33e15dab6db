"""A command reaching an optional module that is not installed ends with one line naming
the extra to install (exit 2), through the real ``riverbed`` group's error mapping; other
missing modules stay bugs (tracebacks)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from riverbed.cli.extras import missing_extra, require_extra
from riverbed.cli.main import _Group


def _root(module: str) -> click.Group:
    @click.command("needs")
    def needs() -> None:
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)

    return _Group("riverbed", commands={"needs": needs})


@pytest.mark.parametrize("module", ["pyspark.sql", "pandas", "pyarrow", "py4j"])
def test_missing_optional_module_is_one_line_naming_the_extra(module: str) -> None:
    result = CliRunner().invoke(_root(module), ["needs"])
    assert result.exit_code == 2
    root = module.partition(".")[0]
    assert result.output == (
        f"riverbed: error: this command needs the 'spark' extra (no "
        f"module named {root!r}): pip install 'riverbed[spark]'\n"
    )


def test_other_missing_modules_are_not_disguised() -> None:
    result = CliRunner().invoke(_root("no_such_module"), ["needs"])
    assert isinstance(result.exception, ModuleNotFoundError)
    assert missing_extra("confluent_kafka") is None  # base dependency: never an extra


def test_require_extra_passes_when_installed() -> None:
    pytest.importorskip("pyspark")
    require_extra("spark", "the demo")
