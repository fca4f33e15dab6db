"""Which pip extra provides an optional module, and the one-line message that says so.

The base install (``pip install riverbed``) carries everything the broker and the Kafka
commands need.  Spark pipelines and the demo need the ``spark`` extra (pyspark, pandas,
pyarrow).  A command that reaches one of those modules without the extra installed ends
with :class:`MissingExtraError` -- one line naming the ``pip install`` to run, exit code 2
-- instead of a traceback; :func:`riverbed.cli.main.main` maps a stray
``ModuleNotFoundError`` for them the same way.
"""

from __future__ import annotations

import importlib.util

from riverbed.errors import ConfigError

# top-level module -> extra that installs it
EXTRA_OF_MODULE = {"pyspark": "spark", "py4j": "spark", "pandas": "spark", "pyarrow": "spark"}


class MissingExtraError(ConfigError):
    """An optional dependency is not installed (a setup mistake: exit code 2)."""


def missing_extra(module: str, what: str = "this command") -> MissingExtraError | None:
    """The error for ``module`` when it is one an extra provides, else None."""
    root = module.partition(".")[0]
    extra = EXTRA_OF_MODULE.get(root)
    if extra is None:
        return None
    return MissingExtraError(
        f"{what} needs the '{extra}' extra (no module named {root!r}): "
        f"pip install 'riverbed[{extra}]'"
    )


def require_extra(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``extra`` is importable."""
    for module, owner in EXTRA_OF_MODULE.items():
        if owner == extra and importlib.util.find_spec(module) is None:
            error = missing_extra(module, what)
            assert error is not None
            raise error
