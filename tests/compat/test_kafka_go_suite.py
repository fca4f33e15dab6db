"""segmentio/kafka-go's own tests against a Riverbed broker, with an allowlist (issue 16).

The module comes from the Go module proxy (its zip carries the root package's tests); the
test binary is built once and cached under ``~/.cache/riverbed/kafka-go/<version>/``.  The
tests dial the fixed address ``localhost:9092`` (SASL on 9093): the broker is a
``riverbed broker`` child on those ports, and this test skips when they are taken.

Every top-level test not allowlisted as failing runs together (about 3 minutes on 2 cores);
the allowlisted failures then run one by one, each alone under 60 s, so that a panic (which
ends a Go test binary) or a long wait cannot hide the other outcomes.
``RIVERBED_KAFKA_GO_RUN`` narrows the run to a ``-test.run`` regexp. A test failing or
skipping that ``kafka_go_allowlist.toml`` does not list, or passing while listed, fails this
test. Skips when ``go`` is missing or the proxy is unreachable.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.testing.franz_go import GoUnavailable, compare, load_allowlist
from riverbed.testing.kafka_go import (
    KafkaGoBroker,
    PortsBusy,
    ensure_test_binary,
    list_tests,
    run_suite,
    start_broker,
)

ALLOWLIST = Path(__file__).with_name("kafka_go_allowlist.toml")
SUITE_TIMEOUT_S = 600.0


def _anchored(tests: list[str]) -> str | None:
    return f"^({'|'.join(tests)})$" if tests else None


@pytest.fixture(scope="module")
def kafka_go_binary() -> Path:
    try:
        return ensure_test_binary()
    except GoUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def kafka_go_broker(tmp_path: Path) -> Iterator[KafkaGoBroker]:
    try:
        broker = start_broker(tmp_path / "data", tmp_path / "broker.log")
    except PortsBusy as exc:
        pytest.skip(str(exc))
    try:
        yield broker
    finally:
        broker.close()


def test_kafka_go_allowlist_is_well_formed() -> None:
    entries = load_allowlist(ALLOWLIST)
    assert entries, "the allowlist is empty: delete it and this check"
    for entry in entries.values():
        assert entry.test.startswith("Test") and entry.reason and entry.issue > 0


@pytest.mark.slow
@pytest.mark.timeout(SUITE_TIMEOUT_S + 600)
def test_kafka_go_suite(
    kafka_go_binary: Path, kafka_go_broker: KafkaGoBroker, tmp_path: Path
) -> None:
    run = os.environ.get("RIVERBED_KAFKA_GO_RUN") or None
    allowlist = load_allowlist(ALLOWLIST)
    failing = sorted(t for t, e in allowlist.items() if e.expect == "fail")
    result = run_suite(
        kafka_go_binary,
        tmp_path / "kafka-go.test2json",
        run=run,
        skip=_anchored(failing),
        timeout_s=SUITE_TIMEOUT_S,
    )
    listed = list_tests(kafka_go_binary, run)
    missing = sorted(set(listed) - set(result.outcomes) - set(failing))
    assert not missing, (
        f"no outcome for {missing} (rc {result.returncode}: a panic or the suite's timeout)"
        f":\n{result.tail()}\n--- broker log tail:\n{kafka_go_broker.tail()}"
    )
    for test in set(failing) & set(listed):
        alone = run_suite(
            kafka_go_binary,
            tmp_path / f"{test}.test2json",
            run=_anchored([test]),
            timeout_s=60,
        )
        result.outcomes[test] = alone.outcomes.get(test, "fail")  # none: panic or timeout
        result.tails[test] = alone.tails.get(test, deque())
    counts = {
        o: sum(1 for v in result.outcomes.values() if v == o) for o in ("pass", "fail", "skip")
    }
    print(f"kafka-go on Riverbed: {counts} in {result.elapsed_s:.0f}s")
    findings = compare(result.outcomes, allowlist)
    if not findings.ok:
        details = [result.output_of(t) for t in findings.unexpected_failures[:5]]
        pytest.fail(
            f"kafka-go outcomes differ from {ALLOWLIST.name} ({counts}):\n"
            f"  failing, not allowlisted: {findings.unexpected_failures}\n"
            f"  skipped, not allowlisted: {findings.unexpected_skips}\n"
            f"  passing, allowlisted (remove them): {findings.now_passing}\n"
            f"  other outcome than listed: {findings.changed}\n"
            + "\n\n".join(details)
            + f"\n--- broker log tail:\n{kafka_go_broker.tail()}"
        )
