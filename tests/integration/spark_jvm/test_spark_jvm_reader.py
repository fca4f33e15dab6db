"""format("riverbed-jvm"), the Java DataSource V2 reader, against format("riverbed").

Differential: for the same topics and options both formats return the same rows (keys and
values with nulls and arbitrary bytes, headers, timestamps, JSON offset ranges, assign,
subscribePattern, startingTimestamp); read_committed skips aborted records and stops at
the last stable offset under an open transaction; bad options fail at load() with one
line.  All rows come from one driver run (see conftest.py).  With ``-m kafka`` the
differential and read_committed tests run against the Apache Kafka reference broker too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from riverbed.spark.jvm import JvmReaderBuildError, jvm_reader_classpath

from .conftest import BASE_TS, Data

Results = tuple[Data, dict[str, dict[str, Any]]]


@pytest.fixture(
    params=[
        "riverbed",
        pytest.param("kafka", marks=[pytest.mark.kafka, pytest.mark.kafka_variant]),
    ]
)
def on_cluster(request: pytest.FixtureRequest) -> Results:
    """Riverbed's broker, and (``-m kafka``) Apache Kafka: the same assertions on both."""
    name = "results" if request.param == "riverbed" else "kafka_results"
    found: Results = request.getfixturevalue(name)
    return found


def rows(results: Results, name: str) -> list[list[Any]]:
    outcome = results[1][name]
    assert "rows" in outcome, f"{name}: {outcome}"
    found: list[list[Any]] = outcome["rows"]
    return found


@pytest.mark.parametrize(
    "case",
    ["all", "ranges", "assign", "pattern", "timestamps", "backwards_skipped", "deleted_skipped"],
)
def test_same_rows_as_the_python_source(on_cluster: Results, case: str) -> None:
    jvm, python = rows(on_cluster, f"jvm_{case}"), rows(on_cluster, f"py_{case}")
    assert jvm == python
    assert jvm, "the case reads something"


def test_rows_have_the_source_schema_and_values(on_cluster: Results) -> None:
    results = on_cluster
    data = results[0]
    every = rows(results, "jvm_all")
    assert len(every) == 90
    by_offset = {(r[3], r[4]): r for r in every}
    first = by_offset[(0, 0)]  # record 0: null key, null value, headers
    assert first[:3] == [None, None, data.plain]
    assert first[5:] == [BASE_TS, 0, [["h", "x0"], ["none", None], ["h", "again"]]]
    assert by_offset[(1, 0)][1] == "v1-\x00\xff" and by_offset[(1, 0)][7] is None
    ranged = rows(results, "jvm_ranges")
    spans = {p: sorted(r[4] for r in ranged if r[3] == p) for p in range(3)}
    assert spans == {0: list(range(3, 20)), 1: list(range(0, 7)), 2: list(range(10, 30))}
    assert {r[3] for r in rows(results, "jvm_assign")} == {0, 2}
    assert min(r[5] for r in rows(results, "jvm_timestamps")) == BASE_TS + 30_000


def test_read_committed_skips_aborted_records_and_stops_at_the_lso(on_cluster: Results) -> None:
    results = on_cluster
    data = results[0]
    committed = rows(results, "jvm_read_committed")
    values = [r[1] for r in committed]
    assert sorted(values) == sorted(data.committed_values)
    uncommitted = {r[1] for r in rows(results, "jvm_read_uncommitted")}
    assert data.aborted_values <= uncommitted and data.open_values <= uncommitted
    assert committed == rows(results, "py_read_committed")


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unknown", "unknown option 'bogus' for format 'riverbed-jvm'"),
        ("no_bootstrap", "option 'kafka.bootstrap.servers' is required"),
        ("two_subscriptions", "exactly one of 'subscribe', 'subscribePattern' or 'assign'"),
        ("latest_start", "startingOffsets 'latest' (-1) is not valid in batch queries"),
        ("auto_offset_reset", "option 'kafka.auto.offset.reset' is not supported"),
        ("bad_json", "startingOffsets: malformed JSON '{oops'"),
        ("missing_partition", "startingOffsets must name exactly the subscribed partitions"),
        ("bad_bool", "option 'includeheaders' must be true or false, got 'yes'"),
        ("deserializer", "option 'kafka.value.deserializer' is not supported"),
    ],
)
def test_bad_options_fail_with_one_line(results: Results, case: str, message: str) -> None:
    outcome = results[1][f"err_{case}"]
    assert "error" in outcome, outcome
    assert outcome["error"].startswith("IllegalArgumentException: "), outcome
    assert message in outcome["error"]


def test_end_before_start_is_data_loss(results: Results) -> None:
    """failOnDataLoss=true fails naming the partition; false skips it (differential above)."""
    error = results[1]["err_backwards"]["error"]
    assert error.startswith("IllegalStateException: "), error
    assert "-0: endingOffsets 3 is before startingOffsets 10" in error
    assert "Set failOnDataLoss=false to skip" in error
    assert {r[3] for r in rows(results, "jvm_backwards_skipped")} == {1, 2}


def test_records_deleted_before_the_read_are_data_loss(on_cluster: Results) -> None:
    """A task whose start is below the log start offset: fail naming the range, or skip."""
    error = on_cluster[1]["err_deleted"]["error"]
    assert error.startswith("IllegalStateException: "), error
    assert "-0: records [0, 4) were deleted before the query read them (log start offset 4)" in (
        error
    )
    assert [r[4] for r in rows(on_cluster, "jvm_deleted_skipped")] == list(range(4, 10))


def test_unreachable_bootstrap_fails_after_the_poll_timeout(results: Results) -> None:
    error = results[1]["err_unreachable"]["error"]
    assert error.startswith("IllegalStateException: no answer from kafka.bootstrap.servers="), error
    assert "127.0.0.1:1 within kafkaConsumer.pollTimeoutMs=2000" in error


def test_missing_build_tools_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JvmReaderBuildError) as caught:
        jvm_reader_classpath(cache=tmp_path / "cache")
    text = str(caught.value)
    assert "\n" not in text and "mvn not found on PATH" in text and "install Maven" in text
