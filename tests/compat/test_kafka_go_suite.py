"""segmentio/kafka-go's own tests against Riverbed and Apache Kafka, with allowlists (issue 16).

The module comes from the Go module proxy (its zip carries the root package's tests); the
test binary is built once and cached under ``~/.cache/riverbed/kafka-go/<version>/``.  The
tests dial the fixed address ``localhost:9092`` (SASL on 9093), so the broker and the test
binary run in a private network namespace (``unshare --net``,
:func:`riverbed.testing.kafka_go.run_isolated`): the host's ports do not matter, and two
runs (Riverbed and Kafka) can go side by side.  Where no namespace can be made (not root,
no CAP_SYS_ADMIN) the run falls back to the host's 9092/9093 when free, and skips with
both reasons otherwise.

Forms:

* default suite: :data:`CI_RUN`, a representative subset (admin APIs, produce/fetch,
  groups, SASL, reader and writer; about a minute), against Riverbed;
* ``-m client_suites`` (docs/compatibility.md): the same subset against Kafka 4.4, and every
  test against Riverbed and against Kafka 4.4 (about 4 minutes each on 2 cores).

Every test not allowlisted as failing runs in one binary invocation; each allowlisted
failure then runs alone under 150 s, so a panic (which ends a Go test binary) or a long
wait cannot hide the other outcomes.  ``RIVERBED_KAFKA_GO_RUN`` replaces the ``-test.run``
regexp of every form.  A test failing or skipping that the target's allowlist
(``kafka_go_allowlist.toml`` for Riverbed, ``kafka_go_kafka_allowlist.toml`` for Kafka)
does not list, or passing while listed, fails the form; against Kafka (timing-bound group
tests on a loaded machine) an unlisted failure counts only if it fails again alone on a
fresh broker.  Skips when ``go`` is missing or the proxy is unreachable.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from riverbed.testing import kafka_go
from riverbed.testing.compat_table import KAFKA_GO
from riverbed.testing.franz_go import AllowlistEntry, GoUnavailable, compare, load_allowlist
from riverbed.testing.kafka_go import ensure_test_binary, list_tests, run_isolated

ALLOWLISTS = {
    "riverbed": Path(__file__).with_name("kafka_go_allowlist.toml"),
    "kafka": Path(__file__).with_name("kafka_go_kafka_allowlist.toml"),
}
SUITE_TIMEOUT_S = 600.0
ALONE_TIMEOUT_S = 150.0  # TestReaderReadCompactedMessage waits for a compaction pass
CI_RUN = (
    "^(TestClient(CreateTopics|DeleteTopics|CreatePartitions|Metadata|ApiVersions|Produce"
    "|ProduceCompressed|Fetch|FetchCompressed|ListOffsets|FindCoordinator|JoinGroup"
    "|OffsetCommit|DeleteOffset|DescribeGroups|DescribeConfigs"
    "|IncrementalAlterConfigs|CreateACLs|DescribeACLs|DeleteACLs|AlterClientQuotas"
    "|AlterPartitionReassignments|ListPartitionReassignments)"
    "|TestAlterUserScramCredentials|TestDescribeUserScramCredentials"
    "|TestUnsupportedSASLMechanism|TestConsumerGroup|TestReader|TestWriter|TestConn)$"
)
"""The default suite's subset: one or two tests per area the suite covers, plus a quick
allowlisted failure (``TestConn``, run alone; it keeps the allowlist current).  The two that
hold the 60 s alone-limit (``TestReaderConsumerGroup``, ``TestReaderReadCompactedMessage``)
are left to the full runs, and so are three whose time is mostly kafka-go's own sleeps and
whose APIs the subset covers otherwise (``TestClientListGroups``, ``TestCloseLeavesGroup``,
``TestReaderOnNonZeroPartition``: 17 s of a 73 s run).  About 55 s on a quiet 2-core
machine (2026-11-27: 84 s before, with Go's default ``-test.parallel`` of 2)."""


def _anchored(tests: list[str]) -> str | None:
    return f"^({'|'.join(tests)})$" if tests else None


@pytest.fixture(scope="module")
def kafka_go_binary() -> Path:
    try:
        return ensure_test_binary()
    except GoUnavailable as exc:
        pytest.skip(str(exc))


def _isolate() -> bool:
    """Namespace if possible; else the host's ports if free; else skip saying why."""
    why = kafka_go.isolation_unavailable()
    if why is None:
        return True
    busy = kafka_go.ports_busy()
    if busy:
        pytest.skip(f"no network namespace ({why}) and 127.0.0.1:{busy} taken on the host")
    print(f"no network namespace ({why}): using the host's 9092/9093")
    return False


def _check(
    target: str,
    binary: Path,
    work_dir: Path,
    run: str | None,
    record: Callable[..., None] | None = None,
) -> dict[str, AllowlistEntry]:
    """``record``: ``record_suite`` (conftest), called with the outcomes unless
    ``RIVERBED_KAFKA_GO_RUN`` replaced the selection."""
    allowlist = load_allowlist(ALLOWLISTS[target])
    if os.environ.get("RIVERBED_KAFKA_GO_RUN"):
        record = None
    run = os.environ.get("RIVERBED_KAFKA_GO_RUN") or run
    listed = list_tests(binary, run)
    # the expected failures of either target run alone: a panic in one ends the binary
    alone = sorted(
        t
        for path in ALLOWLISTS.values()
        for t, e in load_allowlist(path).items()
        if e.expect == "fail" and t in listed
    )
    invocations: dict[str, dict[str, object]] = {
        "main": {"run": run, "skip": _anchored(alone), "timeout_s": SUITE_TIMEOUT_S}
    }
    for test in alone:
        invocations[test] = {"run": _anchored([test]), "timeout_s": ALONE_TIMEOUT_S}
    done = run_isolated(
        target,
        binary,
        work_dir,
        invocations,
        isolate=_isolate(),
        timeout_s=SUITE_TIMEOUT_S + len(alone) * (ALONE_TIMEOUT_S + 30) + 300,
    )
    assert "main" in done.results, f"the main run did not finish:\n{done.broker_log}"
    main = done.results["main"]
    outcomes = dict(main.outcomes)
    tails = dict(main.tails)
    for test in alone:
        single = done.results.get(test)
        outcomes[test] = single.outcomes.get(test, "fail") if single else "fail"  # none: panic
        if single is not None and test in single.tails:
            tails[test] = single.tails[test]
    missing = sorted(set(listed) - set(outcomes))
    assert not missing, (
        f"no outcome for {missing} (rc {main.returncode}: a panic or the suite's timeout)"
        f":\n{main.tail()}\n--- broker log tail:\n{done.broker_log}"
    )
    counts = {o: sum(1 for v in outcomes.values() if v == o) for o in ("pass", "fail", "skip")}
    where = "namespace" if done.isolated else "host ports"
    print(f"kafka-go on {target} ({where}): {counts} in {main.elapsed_s:.0f}s (main run)")
    findings = compare(outcomes, allowlist)
    if target == "kafka" and findings.unexpected_failures:
        # the reference broker on a loaded machine: a group test can run past its 10-30 s
        # context; such a failure counts only if it repeats alone, on a fresh broker
        again = findings.unexpected_failures
        print(f"kafka-go on kafka: running {again} again, each alone")
        retry = run_isolated(
            target,
            binary,
            work_dir / "retry",
            {t: {"run": _anchored([t]), "timeout_s": ALONE_TIMEOUT_S} for t in again},
            isolate=done.isolated,
            timeout_s=len(again) * (ALONE_TIMEOUT_S + 30) + 300,
        )
        for test in again:
            single = retry.results.get(test)
            outcomes[test] = single.outcomes.get(test, "fail") if single else "fail"
            if single is not None and test in single.tails:
                tails[test] = single.tails[test]
        findings = compare(outcomes, allowlist)
    if record is not None:
        record(KAFKA_GO, "CI subset" if run == CI_RUN else "full", target, outcomes)
    if not findings.ok:
        details = ["\n".join(tails.get(t, ())) for t in findings.unexpected_failures[:5]]
        pytest.fail(
            f"kafka-go outcomes on {target} differ from {ALLOWLISTS[target].name} ({counts}):\n"
            f"  failing, not allowlisted: {findings.unexpected_failures}\n"
            f"  skipped, not allowlisted: {findings.unexpected_skips}\n"
            f"  passing, allowlisted (remove them): {findings.now_passing}\n"
            f"  other outcome than listed: {findings.changed}\n"
            + "\n\n".join(details)
            + f"\n--- broker log tail:\n{done.broker_log}"
        )
    return allowlist


@pytest.mark.parametrize("target", sorted(ALLOWLISTS))
def test_kafka_go_allowlist_is_well_formed(target: str) -> None:
    entries = load_allowlist(ALLOWLISTS[target])
    assert entries, "the allowlist is empty: delete it and this check"
    for entry in entries.values():
        assert entry.test.startswith("Test") and entry.reason and entry.issue > 0


def test_without_a_namespace_host_ports_or_a_skip_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kafka_go, "isolation_unavailable", lambda: "unshare --net refused")
    monkeypatch.setattr(kafka_go, "ports_busy", lambda: [])
    assert _isolate() is False
    monkeypatch.setattr(kafka_go, "ports_busy", lambda: [9092])
    with pytest.raises(pytest.skip.Exception, match=r"unshare --net refused.*\[9092\] taken"):
        _isolate()
    monkeypatch.setattr(kafka_go, "isolation_unavailable", lambda: None)
    assert _isolate() is True


def test_namespace_check_says_why_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert kafka_go.isolation_unavailable() == "unshare (util-linux) not on PATH"


@pytest.mark.slow
@pytest.mark.timeout(SUITE_TIMEOUT_S + 900)
def test_kafka_go_suite_reduced(
    kafka_go_binary: Path, tmp_path: Path, record_suite: Callable[..., None]
) -> None:
    _check("riverbed", kafka_go_binary, tmp_path, CI_RUN, record_suite)


@pytest.mark.kafka
@pytest.mark.client_suites
@pytest.mark.timeout(SUITE_TIMEOUT_S + 900)
def test_kafka_go_suite_reduced_on_kafka(
    kafka_go_binary: Path, tmp_path: Path, record_suite: Callable[..., None]
) -> None:
    _check("kafka", kafka_go_binary, tmp_path, CI_RUN, record_suite)


@pytest.mark.client_suites
@pytest.mark.parametrize("target", ["riverbed", pytest.param("kafka", marks=pytest.mark.kafka)])
@pytest.mark.timeout(SUITE_TIMEOUT_S + 1500)
def test_kafka_go_suite_full(
    target: str, kafka_go_binary: Path, tmp_path: Path, record_suite: Callable[..., None]
) -> None:
    _check(target, kafka_go_binary, tmp_path, None, record_suite)
