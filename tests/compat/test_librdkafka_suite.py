"""librdkafka's own test programs against a Riverbed broker, with an allowlist (issue 16).

The test programs come from npm (``@confluentinc/kafka-javascript`` vendors librdkafka's
source tree, ``tests/`` included) and are built once under ``~/.cache/riverbed/librdkafka``
(:mod:`riverbed.testing.librdkafka_suite`).  Each test of
:data:`~riverbed.testing.librdkafka_suite.SUBSET` runs in its own ``test-runner`` process
(quick mode) against one Riverbed broker configured as librdkafka's default test scenario
(auto-created topics with 4 partitions).  ``RIVERBED_LIBRDKAFKA_TESTS`` (comma-separated
names, e.g. ``0012_produce_consume,0081_admin``) replaces the subset.

Behind ``-m client_suites`` (several minutes).  A test failing or skipping that
``librdkafka_allowlist.toml`` does not list, or passing while listed, fails the run.
Skips when npm or a C toolchain is missing or the build fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from riverbed.testing.compat_table import LIBRDKAFKA
from riverbed.testing.embedded import EmbeddedBroker
from riverbed.testing.franz_go import compare, load_allowlist
from riverbed.testing.librdkafka_suite import (
    BROKER_SETTINGS,
    SUBSET,
    LibrdkafkaUnavailable,
    ensure_test_runner,
    run_test,
)

ALLOWLIST = Path(__file__).with_name("librdkafka_allowlist.toml")


def _tests() -> list[str]:
    chosen = os.environ.get("RIVERBED_LIBRDKAFKA_TESTS")
    return [t.strip() for t in chosen.split(",") if t.strip()] if chosen else list(SUBSET)


@pytest.fixture(scope="module")
def tests_dir() -> Path:
    try:
        return ensure_test_runner()
    except LibrdkafkaUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(tmp_path / "data", BROKER_SETTINGS) as embedded:
        yield embedded


def test_librdkafka_allowlist_is_well_formed() -> None:
    entries = load_allowlist(ALLOWLIST)
    assert entries, "the allowlist is empty: delete it and this check"
    for entry in entries.values():
        assert entry.test[:4].isdigit() and entry.reason and entry.issue > 0
        assert entry.test in SUBSET, f"{entry.test} is not in the subset that runs"


@pytest.mark.client_suites
@pytest.mark.timeout(3600)
def test_librdkafka_subset(
    tests_dir: Path, broker: EmbeddedBroker, tmp_path: Path, record_suite: Callable[..., None]
) -> None:
    runs = [run_test(tests_dir, t, broker.bootstrap_servers, tmp_path / "runs") for t in _tests()]
    outcomes = {r.test: r.outcome for r in runs}
    counts = {o: sum(1 for v in outcomes.values() if v == o) for o in ("pass", "fail", "skip")}
    elapsed = sum(r.elapsed_s for r in runs)
    print(f"librdkafka tests on Riverbed: {counts} in {elapsed:.0f}s")
    if not os.environ.get("RIVERBED_LIBRDKAFKA_TESTS"):
        record_suite(LIBRDKAFKA, "subset", "riverbed", outcomes)
    findings = compare(outcomes, load_allowlist(ALLOWLIST))
    if not findings.ok:
        details = [
            f"--- {r.test}:\n{r.tail}" for r in runs if r.test in findings.unexpected_failures
        ]
        pytest.fail(
            f"librdkafka outcomes differ from {ALLOWLIST.name} ({counts}):\n"
            f"  failing, not allowlisted: {findings.unexpected_failures}\n"
            f"  skipped, not allowlisted: {findings.unexpected_skips}\n"
            f"  passing, allowlisted (remove them): {findings.now_passing}\n"
            f"  other outcome than listed: {findings.changed}\n" + "\n".join(details[:5])
        )
