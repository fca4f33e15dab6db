"""franz-go's own kgo integration tests against a Riverbed broker, with an allowlist.

The module comes from the Go module proxy (its zip carries ``pkg/kgo``'s tests); the test
binary is built once and cached under ``~/.cache/riverbed/franz-go/<version>/``.  The
broker is a ``riverbed broker`` child with PLAINTEXT and SASL_PLAINTEXT (SCRAM) listeners,
no initial rebalance delay and a 1 s KIP-848 heartbeat (``franz_go.BROKER_CONFIG``).

CI runs every test with ``KGO_TEST_RECORDS=5000`` (35-50 s on 2 cores, 55-60 s with
Kafka's default group settings; plus up to 90 s for each allowlisted failure, run alone so
that one hanging cannot stall the rest).  Most of it is ``TestGroupETL`` and ``TestTxnEtl``:
their twelve chained-group subtests share four slots and each sleeps 5 s, so the run is as
long as those two whatever else it holds, and a smaller subset would save no time without
dropping one of them (the only group-commit ETL and the only transactions test).  Their
subtests cannot be selected either: a filtered one never frees its slot.  Knobs:

* ``RIVERBED_FRANZ_GO_RECORDS`` — records per ETL test; ``default`` for franz-go's own
  500000 (the documented full run, docs/compatibility.md);
* ``RIVERBED_FRANZ_GO_RUN`` — a ``-test.run`` regexp to run a subset.

``pytest -m client_suites tests/compat/test_franz_go_suite.py`` runs the full form too
(``test_franz_go_kgo_suite_default_records``: 500000 records, many minutes).

A test failing or skipping that ``franz_go_allowlist.toml`` does not list, or passing while
listed, fails this test.  Skips cleanly when ``go`` is missing or the proxy is unreachable.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from riverbed.testing.compat_table import FRANZ_GO, FRANZ_GO_CI
from riverbed.testing.franz_go import (
    FranzGoBroker,
    GoUnavailable,
    compare,
    ensure_test_binary,
    list_tests,
    load_allowlist,
    run_suite,
    start_broker,
)

ALLOWLIST = Path(__file__).with_name("franz_go_allowlist.toml")
CI_RECORDS = 5000


def _records() -> int | None:
    value = os.environ.get("RIVERBED_FRANZ_GO_RECORDS", str(CI_RECORDS))
    return None if value == "default" else int(value)


def _anchored(tests: list[str]) -> str | None:
    return f"^({'|'.join(tests)})$" if tests else None


def _suite_timeout_s(records: int | None = None) -> float:
    return 600.0 if (records or _records()) == CI_RECORDS else 3600.0


@pytest.fixture(scope="module")
def kgo_binary() -> Path:
    try:
        return ensure_test_binary()
    except GoUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def franz_go_broker(tmp_path: Path) -> Iterator[FranzGoBroker]:
    broker = start_broker(tmp_path / "data", tmp_path / "broker.log")
    try:
        yield broker
    finally:
        broker.close()


def test_allowlist_is_well_formed() -> None:
    entries = load_allowlist(ALLOWLIST)
    assert entries, "the allowlist is empty: delete it and this check"
    for entry in entries.values():
        assert entry.test.startswith("Test") and entry.reason and entry.issue > 0


@pytest.mark.slow
@pytest.mark.timeout(_suite_timeout_s() + 300)
def test_franz_go_kgo_suite(
    kgo_binary: Path,
    franz_go_broker: FranzGoBroker,
    tmp_path: Path,
    record_suite: Callable[..., None],
) -> None:
    _run_kgo(kgo_binary, franz_go_broker, tmp_path, _records(), record_suite)


@pytest.mark.client_suites
@pytest.mark.timeout(3600 + 300)
def test_franz_go_kgo_suite_default_records(
    kgo_binary: Path,
    franz_go_broker: FranzGoBroker,
    tmp_path: Path,
    record_suite: Callable[..., None],
) -> None:
    """The documented full run: franz-go's own 500000 records per ETL test."""
    _run_kgo(kgo_binary, franz_go_broker, tmp_path, None, record_suite)


def _run_kgo(
    kgo_binary: Path,
    franz_go_broker: FranzGoBroker,
    tmp_path: Path,
    records: int | None,
    record_suite: Callable[..., None],
) -> None:
    run = os.environ.get("RIVERBED_FRANZ_GO_RUN") or None
    allowlist = load_allowlist(ALLOWLIST)
    # Expected failures run one by one with a short timeout (some hang until it, e.g. a
    # transaction whose coordinator never answers); the rest run together.
    failing = sorted(t for t, e in allowlist.items() if e.expect == "fail")
    result = run_suite(
        kgo_binary,
        franz_go_broker,
        tmp_path / "kgo.test2json",
        records=records,
        run=run,
        skip=_anchored(failing),
        timeout_s=_suite_timeout_s(records) if records else 3600.0,
    )
    missing = sorted(set(list_tests(kgo_binary, run)) - set(result.outcomes) - set(failing))
    assert not missing, (
        f"no outcome for {missing} (rc {result.returncode}: a panic or the suite's timeout)"
        f":\n{result.tail()}\n--- broker log tail:\n{franz_go_broker.tail()}"
    )
    for test in set(failing) & set(list_tests(kgo_binary, run)):
        alone = run_suite(
            kgo_binary,
            franz_go_broker,
            tmp_path / f"{test}.test2json",
            records=records,
            run=_anchored([test]),
            timeout_s=90 if records == CI_RECORDS else 3600.0,
        )
        result.outcomes[test] = alone.outcomes.get(test, "fail")  # no outcome: timed out
        result.tails[test] = alone.tails.get(test, deque())
    counts = {
        o: sum(1 for v in result.outcomes.values() if v == o) for o in ("pass", "fail", "skip")
    }
    print(f"franz-go kgo on Riverbed: {counts} in {result.elapsed_s:.0f}s")
    if run is None:  # docs/compatibility.md's table (recorded when $RIVERBED_COMPAT_RESULTS)
        form = FRANZ_GO_CI if records == CI_RECORDS else f"KGO_TEST_RECORDS={records or 500000}"
        record_suite(FRANZ_GO, form, "riverbed", dict(result.outcomes))
    findings = compare(result.outcomes, allowlist)
    if not findings.ok:
        details = [result.output_of(t) for t in findings.unexpected_failures[:5]]
        pytest.fail(
            f"franz-go outcomes differ from {ALLOWLIST.name} ({counts}):\n"
            f"  failing, not allowlisted: {findings.unexpected_failures}\n"
            f"  skipped, not allowlisted: {findings.unexpected_skips}\n"
            f"  passing, allowlisted (remove them): {findings.now_passing}\n"
            f"  other outcome than listed: {findings.changed}\n"
            + "\n\n".join(details)
            + f"\n--- broker log tail:\n{franz_go_broker.tail()}"
        )
