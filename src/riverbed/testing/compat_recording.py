"""pytest hooks that record compat scenario outcomes for docs/compatibility.md's table.

A conftest enables them for its directory by importing them::

    from riverbed.testing.compat_recording import (  # noqa: F401
        pytest_runtest_makereport,
        pytest_sessionfinish,
    )

They do nothing unless ``$RIVERBED_COMPAT_RESULTS`` names a directory
(:mod:`riverbed.testing.compat_table`: the file format, the table rows).  Which broker a
node ran against comes from its parameters: the ``server``/``acl_server``/``target``
parameter (a fixture or value naming ``kafka`` or ``riverbed``), ``servers`` (a
differential, both), else the broker fixtures it uses (``*_riverbed``: Riverbed).
"""

from __future__ import annotations

import shlex
from collections.abc import Generator, Mapping, Sequence
from typing import Any

import pytest

from riverbed.testing.compat_table import RECORDER, client_versions

_PARAMS = ("server", "acl_server", "target")
_KAFKA_FIXTURES = ("kafka_reference", "fixes_kafka")
_RIVERBED_FIXTURES = ("riverbed_broker", "fixes_riverbed", "broker")


def broker_of(fixturenames: Sequence[str], params: Mapping[str, Any]) -> str | None:
    """``riverbed``, ``kafka``, ``both`` or None (no broker: a helper's self-check)."""
    if "servers" in fixturenames:
        return "both"
    for key in _PARAMS:
        value = params.get(key)
        if isinstance(value, str):
            if "kafka" in value:
                return "kafka"
            if "riverbed" in value:
                return "riverbed"
    if any(name in fixturenames for name in _KAFKA_FIXTURES):
        return "kafka"
    if any(n in _RIVERBED_FIXTURES or n.endswith("_riverbed") for n in fixturenames):
        return "riverbed"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    if not RECORDER.enabled:
        return
    report: pytest.TestReport = outcome.get_result()
    if report.when != "call" and report.outcome == "passed":
        return  # setup/teardown passing says nothing; the call's report does
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    broker = broker_of(list(getattr(item, "fixturenames", ())), params)
    if broker is None:
        return
    result = {"passed": "pass", "failed": "fail", "skipped": "skip"}[report.outcome]
    reason = ""
    if result == "skip" and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    RECORDER.scenario(item.nodeid, broker, result, reason)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not RECORDER.enabled:
        return
    args = shlex.join(session.config.invocation_params.args)
    path = RECORDER.write(f"pytest {args}".strip(), client_versions())
    if path is not None:
        print(f"\ncompat results: {path}")
