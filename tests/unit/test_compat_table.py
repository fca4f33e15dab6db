"""docs/compatibility.md's generated table (riverbed.testing.compat_table,
scripts/compat_table.py): recording, merging runs, cells, marker replacement, idempotence."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing import compat_recording
from riverbed.testing import compat_table as ct
from riverbed.testing.compat_recording import broker_of

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "compatibility.md"
RESULTS = ROOT / "docs" / "compat-results"


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "compat_table_script", ROOT / "scripts" / "compat_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(recorded: str, scenarios: list[dict[str, str]], suites: Any = ()) -> dict[str, Any]:
    return {
        "format": 1,
        "source": "run",
        "recorded": recorded,
        "command": "pytest x",
        "versions": {"confluent-kafka": "2.16.1"},
        "scenarios": scenarios,
        "suites": list(suites),
    }


def _rec(node: str, broker: str, outcome: str, reason: str = "") -> dict[str, str]:
    rule = ct.scenario_for(node)
    assert rule is not None, node
    return {
        "node": node,
        "client": rule.client,
        "feature": rule.feature,
        "broker": broker,
        "outcome": outcome,
        "reason": reason,
    }


def _write(directory: Path, name: str, doc: dict[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(json.dumps(doc))


def _row(results: ct.Results, client: str, feature_start: str) -> tuple[str, str]:
    for c, f, riverbed, kafka in ct.table_rows(results):
        if c == client and f.startswith(feature_start):
            return riverbed, kafka
    raise AssertionError(f"no row {client} / {feature_start}")


CONFLUENT_RT = "tests/compat/test_roundtrip.py::test_python_clients_roundtrip[{}-confluent-{}]"


def test_nodes_map_to_their_client_and_feature() -> None:
    assert ct.scenario_for(CONFLUENT_RT.format("riverbed", "zstd")).client == "confluent-kafka"
    node = "tests/compat/test_roundtrip.py::test_python_clients_roundtrip[kafka-kafka-python-lz4]"
    assert ct.scenario_for(node).client == "kafka-python"
    node = "tests/integration/compat_fixes/test_regex_subscriptions.py::test_x[kafka]"
    assert "regex" in ct.scenario_for(node).feature
    assert ct.scenario_for("tests/compat/test_errors_admin.py::test_compare_normalises") is None
    assert ct.scenario_for("tests/compat/test_errors_admin.py::test_list_offsets_specs_max_x")


def test_a_node_no_rule_names_gets_a_row_of_its_own(tmp_path: Path) -> None:
    node = "tests/compat/test_new.py::test_something[riverbed]"
    rule = ct.scenario_for(node)
    assert rule is not None and rule.client == ct.OTHER
    assert rule.feature == "`test_new.py::test_something`"
    _write(tmp_path, "r.json", _run("2026-01-01T00:00:00Z", [_rec(node, "riverbed", "pass")]))
    rows = ct.table_rows(ct.load_results([tmp_path]))
    assert rows[-len(ct.SUITE_FEATURES) - 1] == (ct.OTHER, rule.feature, "pass", "—")
    assert ct.scenario_for("tests/compat/test_errors_admin.py::test_compare_same_x") is None
    assert ct.scenario_for("tests/compat/test_librdkafka_suite.py::test_librdkafka_subset") is None


def test_broker_from_params_and_fixtures() -> None:
    assert broker_of(["server"], {"server": "kafka_reference"}) == "kafka"
    assert broker_of(["server"], {"server": "fixes_riverbed"}) == "riverbed"
    assert broker_of(["acl_server"], {"acl_server": "acl_kafka"}) == "kafka"
    assert broker_of(["servers", "kafka_reference", "riverbed_broker"], {}) == "both"
    assert broker_of(["broker", "tmp_path"], {}) == "riverbed"
    assert broker_of(["tmp_path"], {}) is None
    # a client parameter naming kafka is not the broker
    assert broker_of(["server", "client"], {"server": "riverbed_broker", "client": "kafka"}) == (
        "riverbed"
    )


def test_recorder_is_off_by_default_and_writes_once(tmp_path: Path) -> None:
    off = ct.Recorder(None)
    off.scenario(CONFLUENT_RT.format("riverbed", "none"), "riverbed", "pass")
    assert off.write("pytest", {}) is None and not off.scenarios
    on = ct.Recorder(tmp_path / "out")
    node = CONFLUENT_RT.format("riverbed", "none")
    on.scenario(node, "riverbed", "fail")
    on.scenario(node, "riverbed", "pass")  # a later phase passing keeps the failure
    on.scenario("tests/compat/test_errors_admin.py::test_compare_x", "kafka", "pass")  # dropped
    on.suite("n", ct.KAFKA_GO, "CI subset", "riverbed", {"TestA": "pass"})
    path = on.write("pytest -m x", {"kafka-python": "3"})
    assert path is not None and on.write("again", {}) == path
    doc = json.loads(path.read_text())
    assert [s["outcome"] for s in doc["scenarios"]] == ["fail"]
    assert doc["suites"][0]["outcomes"] == {"TestA": "pass"}
    assert list((tmp_path / "out").iterdir()) == [path]
    with pytest.raises(ct.CompatTableError):
        on.suite("n", ct.KAFKA_GO, "full", "riverbed", {"TestA": "passed"})


def test_runs_combine_and_the_newest_non_skip_wins(tmp_path: Path) -> None:
    rb, kf = CONFLUENT_RT.format("riverbed", "none"), CONFLUENT_RT.format("kafka", "none")
    a = _run("2026-01-01T00:00:00Z", [_rec(rb, "riverbed", "fail"), _rec(kf, "kafka", "pass")])
    # b: Riverbed again, its Kafka variants gated (skipped): a's Kafka result stays
    b = _run("2026-01-02T00:00:00Z", [_rec(rb, "riverbed", "pass"), _rec(kf, "kafka", "skip")])
    _write(tmp_path, "a.json", a)
    _write(tmp_path, "b.json", b)
    results = ct.load_results([tmp_path])
    assert _row(results, "confluent-kafka", "produce/consume") == ("pass", "pass")
    assert _row(results, "kcat", "produce") == ("—", "—")
    assert [r["recorded"][:10] for r in results.runs] == ["2026-01-01", "2026-01-02"]
    c = _run("2026-01-03T00:00:00Z", [_rec(rb, "riverbed", "pass"), _rec(kf, "kafka", "fail")])
    _write(tmp_path, "c.json", c)
    results = ct.load_results([tmp_path])
    assert _row(results, "confluent-kafka", "produce/consume") == (
        "pass",
        "**1 fail** (`confluent-none`)",
    )
    assert [r["recorded"][:10] for r in results.runs] == ["2026-01-03"]  # only c's count


def test_a_newer_run_of_a_file_drops_its_older_nodes(tmp_path: Path) -> None:
    old = "tests/compat/test_record_errors.py::test_old_name[riverbed]"
    new = "tests/compat/test_record_errors.py::test_new_name[riverbed]"
    on_kafka = "tests/compat/test_record_errors.py::test_old_name[kafka]"
    _write(
        tmp_path,
        "a.json",
        _run(
            "2026-01-01T00:00:00Z", [_rec(old, "riverbed", "fail"), _rec(on_kafka, "kafka", "pass")]
        ),
    )
    _write(tmp_path, "b.json", _run("2026-01-02T00:00:00Z", [_rec(new, "riverbed", "pass")]))
    results = ct.load_results([tmp_path])
    assert sorted(results.scenarios) == [new, on_kafka]  # the other broker's node stays
    assert _row(results, "confluent-kafka", "keyless records") == ("pass", "pass")


def test_cells_count_and_name_failures() -> None:
    recs = [
        {"node": CONFLUENT_RT.format("riverbed", c), "outcome": o}
        for c, o in (("none", "pass"), ("gzip", "fail"), ("lz4", "pass"), ("zstd", "skip"))
    ]
    assert ct.scenario_cell(recs) == "**1 fail** (`confluent-gzip`), 2 pass, 1 skip"
    assert ct.scenario_cell([{"node": "x", "outcome": "skip", "reason": "no kcat"}]) == (
        "skip: no kcat"
    )
    assert ct.scenario_cell([]) == "—"
    outcomes = {"TestA": "pass", "TestB": "fail", "TestC": "skip", "TestD": "pass"}
    assert ct.suite_cell(outcomes) == "2 pass, 1 fail (`TestB`), 1 skip"
    assert ct.suite_cell({"TestO": "skip"}) == "skip"
    assert ct.suite_cell({"TestO": "skip", "TestP": "skip"}) == "2 skip (`TestO`, `TestP`)"


def test_differentials_fill_both_columns_and_suites_split_by_feature(tmp_path: Path) -> None:
    node = "tests/compat/test_differential.py::test_roundtrip_is_identical[confluent]"
    suite = {
        "node": "s",
        "client": ct.FRANZ_GO,
        "form": ct.FRANZ_GO_CI,
        "broker": "riverbed",
        "outcomes": {"TestGroupETL": "pass", "TestTxnEtl": "fail", "TestOAuthAuth": "skip"},
    }
    _write(tmp_path, "r.json", _run("2026-01-01T00:00:00Z", [_rec(node, "both", "pass")], [suite]))
    results = ct.load_results([tmp_path])
    assert _row(results, "differential (Kafka vs Riverbed)", "round trip: confluent") == (
        "identical",
        "identical",
    )
    assert _row(results, ct.FRANZ_GO, "transactions")[0] == "fail"
    assert _row(results, ct.FRANZ_GO, "every top-level")[0] == (
        "1 pass, 1 fail (`TestTxnEtl`), 1 skip"
    )


def test_manual_cells_are_labelled_and_yield_to_runs(tmp_path: Path) -> None:
    manual = {
        "format": 1,
        "source": "manual",
        "records": [
            {
                "client": ct.KAFKA_GO,
                "feature": f,
                "broker": b,
                "result": "9 pass",
                "date": "2026-01-01",
                "command": "by hand",
            }
            for f in ("every top-level test of the root package",)
            for b in ct.BROKERS
        ],
    }
    _write(tmp_path, "manual.json", manual)
    suite = {
        "node": "s",
        "client": ct.KAFKA_GO,
        "form": "full",
        "broker": "riverbed",
        "outcomes": {"TestA": "pass"},
    }
    _write(tmp_path, "run.json", _run("2026-01-02T00:00:00Z", [], [suite]))
    results = ct.load_results([tmp_path])
    assert _row(results, ct.KAFKA_GO, "every top-level") == (
        "pass",
        "9 pass *(recorded manually, 2026-01-01)*",
    )
    assert "* recorded manually 2026-01-01: `by hand`" in ct.render_table(results)
    kafka_run = {**suite, "broker": "kafka"}
    _write(tmp_path, "run2.json", _run("2026-01-03T00:00:00Z", [], [kafka_run]))
    results = ct.load_results([tmp_path])
    assert _row(results, ct.KAFKA_GO, "every top-level") == ("pass", "pass")
    assert "recorded manually" not in ct.render_table(results)  # no longer a source


def test_the_committed_manual_records_name_existing_rows() -> None:
    rows = {(c, f) for c, f, _r, _k in ct.table_rows(ct.Results())}
    manual = json.loads((RESULTS / "manual.json").read_text())
    assert manual["source"] == "manual"
    for rec in manual["records"]:
        assert (rec["client"], rec["feature"]) in rows, rec


def test_markers_replace_only_the_table_and_regenerating_is_idempotent(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    before = f"# T\n\ntext | with bars\n\n{ct.BEGIN}\nold\ntable\n{ct.END}\n\nafter\n"
    doc.write_text(before)
    _write(
        tmp_path / "res",
        "r.json",
        _run("2026-01-01T00:00:00Z", [_rec(CONFLUENT_RT.format("kafka", "none"), "kafka", "pass")]),
    )
    assert ct.regenerate(doc, [tmp_path / "res"]) is True
    first = doc.read_text()
    assert first.startswith("# T\n\ntext | with bars\n\n" + ct.BEGIN + "\n| client |")
    assert first.endswith(ct.END + "\n\nafter\n") and "old\ntable" not in first
    assert ct.regenerate(doc, [tmp_path / "res"]) is False
    assert doc.read_text() == first
    with pytest.raises(ct.CompatTableError, match="exactly one"):
        ct.replace_between_markers("no markers", "t")
    with pytest.raises(ct.CompatTableError, match="exactly one"):
        ct.replace_between_markers(f"{ct.END} {ct.BEGIN}", "t")


def test_bad_inputs_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ct.CompatTableError, match=r"bad\.json: not readable JSON"):
        ct.load_results([tmp_path])
    (tmp_path / "bad.json").write_text('{"format": 9}')
    with pytest.raises(ct.CompatTableError, match="not a compat results file"):
        ct.load_results([tmp_path])
    script = _script()
    doc = tmp_path / "doc.md"
    doc.write_text(f"{ct.BEGIN}\n{ct.END}\n")
    assert script.main(["--doc", str(doc), "--from", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compat_table: ") and err.count("\n") == 1
    assert script.main(["--doc", str(doc), "--from", str(tmp_path / "missing")]) == 2


def test_script_check_says_stale_then_up_to_date(tmp_path: Path) -> None:
    script = _script()
    doc = tmp_path / "doc.md"
    doc.write_text(f"x\n{ct.BEGIN}\nstale\n{ct.END}\n")
    res = tmp_path / "res"
    res.mkdir()
    assert script.main(["--doc", str(doc), "--from", str(res), "--check"]) == 1
    assert script.main(["--doc", str(doc), "--from", str(res)]) == 0
    assert script.main(["--doc", str(doc), "--from", str(res), "--check"]) == 0


def test_the_committed_table_is_generated_from_the_committed_results() -> None:
    document = DOC.read_text(encoding="utf-8")
    table = ct.render_table(ct.load_results([RESULTS]))
    assert ct.replace_between_markers(document, table) == document, (
        "docs/compatibility.md's table is stale: .venv/bin/python scripts/compat_table.py"
    )
    assert re.search(r"\| client \| feature \| Riverbed \| Kafka \|", document)


class _Report:
    def __init__(self, when: str, outcome: str, longrepr: Any = None) -> None:
        self.when, self.outcome, self.longrepr = when, outcome, longrepr


class _Outcome:
    def __init__(self, report: _Report) -> None:
        self._report = report

    def get_result(self) -> _Report:
        return self._report


class _Item:
    nodeid = "tests/compat/test_roundtrip.py::test_kcat_roundtrip[kafka-lz4]"
    fixturenames = ["server", "new_topic", "codec"]

    class callspec:  # pytest's attribute name
        params = {"server": "kafka_reference", "codec": "lz4"}


def _drive(report: _Report) -> None:
    hook = compat_recording.pytest_runtest_makereport(_Item(), None)  # type: ignore[arg-type]
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(_Outcome(report))


def test_the_hook_records_each_nodes_outcome_and_skip_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = ct.Recorder(tmp_path)
    monkeypatch.setattr(compat_recording, "RECORDER", recorder)
    _drive(_Report("setup", "passed"))
    assert recorder.scenarios == {}  # a passing setup says nothing yet
    _drive(_Report("setup", "skipped", ("f.py", 1, "Skipped: kcat not installed")))
    [rec] = recorder.scenarios.values()
    assert (rec["client"], rec["broker"], rec["outcome"], rec["reason"]) == (
        "kcat",
        "kafka",
        "skip",
        "kcat not installed",
    )
    _drive(_Report("call", "passed"))
    _drive(_Report("teardown", "failed"))
    assert next(iter(recorder.scenarios.values()))["outcome"] == "fail"
