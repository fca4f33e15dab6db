"""Subcommands of ``riverbed``, registered on import by :func:`riverbed.cli.main.main`."""

from __future__ import annotations
