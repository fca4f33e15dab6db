"""docs/compatibility.md's client x feature x result table, generated from recorded runs.

Recording (``tests/compat/conftest.py``, ``tests/integration/compat_fixes/conftest.py``):
with ``$RIVERBED_COMPAT_RESULTS`` set to a directory, a pytest session that runs compat
scenarios writes one JSON file there when it ends, ``run-<UTC time>-<pid>.json``; unset
(the default), nothing is written.  The file (:data:`FORMAT` 1)::

    {"format": 1, "source": "run", "recorded": "2026-11-26T12:40:00Z",
     "command": "pytest ...", "versions": {"confluent-kafka": "2.16.0", ...},
     "scenarios": [{"node": "test_roundtrip.py::test_kcat_roundtrip[riverbed-lz4]",
                    "client": "kcat", "feature": "...", "broker": "riverbed",
                    "outcome": "pass", "reason": ""}],
     "suites": [{"node": "...", "client": "franz-go", "form": "...", "broker": "riverbed",
                 "outcomes": {"TestGroupETL": "pass", ...}}]}

``broker`` is ``riverbed``, ``kafka`` (the Apache Kafka reference) or ``both`` (a
differential: one scenario run on both and diffed); ``outcome`` is ``pass``, ``fail`` or
``skip``.  Which client and feature a scenario node shows is :data:`SCENARIOS` (first
matching rule; one no rule names gets a row of its own, :data:`OTHER`; helpers'
self-checks, :data:`SELF_CHECKS`, are left out).  A
client suite's per-test outcomes are split over feature rows by :data:`SUITE_FEATURES`.

A *manual* source (``"source": "manual"``, e.g. ``docs/compat-results/manual.json``) holds
results recorded by hand, each with its date and command: ``{"format": 1, "source":
"manual", "records": [{"client", "feature", "broker", "result", "date", "command"}]}``.
A manual cell is shown only where no run covers that client, feature and broker, and is
labelled so.

Generating: :func:`load_results` reads every ``*.json`` of the given directories; per
scenario node the newest run that did not skip it wins (a Riverbed-only run and a later
Kafka-only run combine), but the newest run that ran (not skipped) any node of a test file
on a broker drops the older runs' nodes of that file and broker (a renamed test does not
linger); per suite form the newest run wins.  :func:`render_table` writes the
Markdown, :func:`replace_between_markers` puts it between :data:`BEGIN` and :data:`END`
(the rest of the document is left byte for byte; regenerating is idempotent).  Errors in
inputs raise :class:`CompatTableError` (one line).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from riverbed.errors import RiverbedError

FORMAT = 1
BEGIN = "<!-- compat-table:begin -->"
END = "<!-- compat-table:end -->"
ENV = "RIVERBED_COMPAT_RESULTS"
BROKERS = ("riverbed", "kafka")
OUTCOMES = ("pass", "fail", "skip")
NOT_RUN = "—"


class CompatTableError(RiverbedError):
    """A results file or the document cannot be used (one line, names the file)."""


@dataclass(frozen=True)
class Scenario:
    """Nodes whose id (``file.py::test[params]``, directories dropped) matches ``pattern``
    (``re.search``) show as ``client`` x ``feature``."""

    client: str
    feature: str
    pattern: str


@dataclass(frozen=True)
class SuiteFeature:
    """A client suite's top-level tests matching ``pattern`` (``re.search``; ``""``: every
    test) show as ``client`` x ``feature`` for the suite run ``form``."""

    client: str
    form: str
    feature: str
    pattern: str


_RT = r"test_roundtrip\.py::"
_EA = r"test_errors_admin\.py::"
_DF = r"test_differential\.py::"
_GC = r"test_group_configs_differential\.py::"
_FX = r"compat_fixes/"

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "confluent-kafka",
        "produce/consume round trip, 5 codecs, keys, headers, timestamps",
        _RT + r"test_python_clients_roundtrip\[\w+-confluent-",
    ),
    Scenario(
        "confluent-kafka",
        "batches stored with the producer's codec (raw fetch)",
        _RT + r"test_batches_keep_the_producer_codec",
    ),
    Scenario(
        "confluent-kafka", "offsets_for_times", _EA + r"test_offsets_for_times\[\w+-confluent"
    ),
    Scenario(
        "confluent-kafka",
        "ListOffsets -2/-1/-3 (max timestamp inside a compressed batch)",
        _EA + r"test_list_offsets_specs_max_timestamp",
    ),
    Scenario(
        "confluent-kafka",
        "admin life cycle (create/describe/alter configs/partitions/delete)",
        _EA + r"test_confluent_admin_lifecycle",
    ),
    Scenario(
        "confluent-kafka",
        "bad-input errors (MESSAGE_TOO_LARGE, OFFSET_OUT_OF_RANGE)",
        _EA + r"(test_message_too_large_through_client|test_fetch_out_of_range\[\w+-confluent)",
    ),
    Scenario(
        "confluent-kafka",
        "keyless records on a compacted topic: only they fail INVALID_RECORD",
        r"test_record_errors\.py::",
    ),
    Scenario(
        "confluent-kafka",
        "transactions: commit, abort, fencing, an open transaction holding the LSO",
        r"test_transactions_compat\.py::",
    ),
    Scenario(
        "confluent-kafka",
        "authorized operations (describe_cluster / describe_topics / groups), "
        "with and without StandardAuthorizer",
        _FX + r"test_authorized_operations\.py::",
    ),
    Scenario(
        "confluent-kafka",
        "KIP-848 regex subscriptions resolved by the broker (RE2, topics created later)",
        _FX + r"test_regex_subscriptions\.py::",
    ),
    Scenario(
        "kafka-python / confluent-kafka",
        "replica assignment naming the only broker (CreateTopics, CreatePartitions)",
        r"test_replica_assignment\.py::",
    ),
    Scenario(
        "kafka-python",
        "produce/consume round trip, 5 codecs",
        _RT + r"test_python_clients_roundtrip\[\w+-kafka-python-",
    ),
    Scenario(
        "kafka-python", "offsets_for_times", _EA + r"test_offsets_for_times\[\w+-kafka-python"
    ),
    Scenario(
        "kafka-python",
        "admin life cycle (legacy AlterConfigs re-sends the other keys)",
        _EA + r"test_kafka_python_admin_lifecycle",
    ),
    Scenario(
        "kafka-python", "OFFSET_OUT_OF_RANGE", _EA + r"test_fetch_out_of_range\[\w+-kafka-python"
    ),
    Scenario(
        "kafka-python",
        "Alter/ListPartitionReassignments on one broker",
        r"test_partition_reassignments\.py::",
    ),
    Scenario(
        "aiokafka",
        "produce/consume round trip, 5 codecs",
        _RT + r"test_python_clients_roundtrip\[\w+-aiokafka-",
    ),
    Scenario("aiokafka", "offsets_for_times", _EA + r"test_offsets_for_times\[\w+-aiokafka"),
    Scenario("kcat", "produce/consume round trip, 5 codecs", _RT + r"test_kcat_roundtrip"),
    Scenario(
        "Java kafka-clients", "produce/consume round trip, 5 codecs", _RT + r"test_java_client_"
    ),
    Scenario("Java kafka-clients", "offsets_for_times", _EA + r"test_offsets_for_times_java"),
    Scenario(
        "Java kafka-clients (raw Produce v12)",
        "TV2 Produce behind EndTxn waits for the markers (no NOT_ENOUGH_REPLICAS)",
        _FX + r"test_produce_waits_for_markers\.py::test_next_",
    ),
    Scenario(
        "raw wire",
        "Produce errors (acks, unknown partition/topic, MESSAGE_TOO_LARGE)",
        _EA + r"test_raw_produce_errors",
    ),
    Scenario(
        "raw wire",
        "Produce to a compacted topic with keyless records: record_errors as Kafka's",
        _FX + r"test_keyless_compacted_produce\.py::",
    ),
    Scenario(
        "raw wire",
        "CreateTopics naming a topic twice: INVALID_REQUEST for it, the rest created",
        _FX + r"test_create_topics_duplicates\.py::",
    ),
    Scenario(
        "raw wire",
        "Metadata auto-creation: UNKNOWN_TOPIC_OR_PARTITION, then the partitions; "
        "illegal names; internal topics",
        _FX + r"test_metadata_auto_create\.py::",
    ),
    Scenario(
        "raw wire",
        "`segment.bytes` below 1 MiB refused in Kafka's words; `internal.segment.bytes`",
        r"test_segment_bytes_differential\.py::",
    ),
    Scenario(
        "raw wire",
        "AlterUserScramCredentials altering one user twice: DUPLICATE_RESOURCE",
        _GC + r"test_one_user_altered_twice",
    ),
    Scenario(
        "raw wire",
        "GROUP configs as Kafka 4.4's GroupConfig (its Kafka column: a 4.4 reference): "
        "described, set, deleted, refused in its words; intervals applied to members",
        _GC,
    ),
    Scenario(
        "differential (Kafka vs Riverbed)",
        "round trip: confluent-kafka, kafka-python, aiokafka",
        _DF + r"test_roundtrip_is_identical",
    ),
    Scenario(
        "differential (Kafka vs Riverbed)",
        "round trip: Java kafka-clients, kcat",
        _DF + r"test_(java|kcat)_roundtrip_is_identical",
    ),
    Scenario(
        "differential (Kafka vs Riverbed)",
        "offsets_for_times (4 clients) and ListOffsets specs",
        _DF + r"test_offsets_for_times_are_identical",
    ),
    Scenario(
        "differential (Kafka vs Riverbed)",
        "admin life cycles (confluent-kafka, kafka-python)",
        _DF + r"test_admin_lifecycles_are_identical",
    ),
    Scenario(
        "differential (Kafka vs Riverbed)",
        "bad inputs: raw errors, OFFSET_OUT_OF_RANGE through clients",
        _DF + r"test_bad_inputs_answer_the_same_errors",
    ),
)
"""Scenario nodes → table rows, in table order (first match wins)."""

FRANZ_GO = "franz-go v1.22.3 (its own `pkg/kgo` tests)"
FRANZ_GO_CI = "every top-level test, `KGO_TEST_RECORDS=5000`"
KAFKA_GO = "kafka-go v0.4.51 (its own tests)"
LIBRDKAFKA = "librdkafka 2.15.1 (its own test programs)"

SUITE_FEATURES: tuple[SuiteFeature, ...] = (
    SuiteFeature(
        FRANZ_GO,
        FRANZ_GO_CI,
        "consumer groups ETL, every balancer, classic and KIP-848 (`TestGroupETL`)",
        r"^TestGroupETL$",
    ),
    SuiteFeature(FRANZ_GO, FRANZ_GO_CI, "transactions ETL (`TestTxnEtl`)", r"^TestTxnEtl$"),
    SuiteFeature(
        FRANZ_GO,
        FRANZ_GO_CI,
        "KIP-848 broker-side regex subscriptions (`Test848RegexBrokerResolves`)",
        r"^Test848RegexBrokerResolves$",
    ),
    SuiteFeature(
        FRANZ_GO,
        FRANZ_GO_CI,
        "share groups (`TestShareGroup*`, `TestConsumeRegexShareSkipsInternal`)",
        r"^(TestShareGroup|TestConsumeRegexShare)",
    ),
    SuiteFeature(FRANZ_GO, FRANZ_GO_CI, "SASL/SCRAM-SHA-256 (`TestSCRAMAuth*`)", r"^TestSCRAMAuth"),
    SuiteFeature(FRANZ_GO, FRANZ_GO_CI, "SASL/OAUTHBEARER (`TestOAuthAuth`)", r"^TestOAuthAuth$"),
    SuiteFeature(
        FRANZ_GO,
        FRANZ_GO_CI,
        "Produce v2 refused (`TestIssueProduceBrokerTooOldFailsRecords`)",
        r"^TestIssueProduceBrokerTooOldFailsRecords$",
    ),
    SuiteFeature(
        FRANZ_GO,
        FRANZ_GO_CI,
        "every top-level test (produce, consume, groups, admin; many need no broker)",
        "",
    ),
    SuiteFeature(
        KAFKA_GO,
        "CI subset",
        "CI subset (`CI_RUN`: admin APIs, produce/fetch, groups, SASL, reader, writer)",
        "",
    ),
    SuiteFeature(KAFKA_GO, "full", "every top-level test of the root package", ""),
    SuiteFeature(
        LIBRDKAFKA,
        "subset",
        "the documented subset of broker tests (`SUBSET`)",
        "",
    ),
)
"""Client suite runs → table rows, in table order, after the scenario rows.  A test is
counted in every row whose pattern it matches (the ``""`` rows are the totals)."""


SELF_CHECKS = (r"test_errors_admin\.py::test_compare_", r"_suite\.py::")
"""Nodes never recorded as scenarios: checks of the test helpers themselves, and the client
suite tests (their per-test outcomes are recorded with ``record_suite`` instead)."""

OTHER = "other scenarios"
"""The client of a node no rule names: its row is the test function (added after the rest)."""


def _short(node: str) -> str:
    short = node.replace("\\", "/")
    short = short.split("tests/", 1)[1] if "tests/" in short else short
    return short.removeprefix("compat/").removeprefix("integration/")


def scenario_for(node: str) -> Scenario | None:
    """The rule for a node id (``tests/compat/x.py::t[p]`` or with fewer directories);
    None for a helper self-check.  A node no rule names gets a row of its own
    (:data:`OTHER`, its ``file::function``), so new scenarios show until given a row."""
    short = _short(node)
    if any(re.search(p, short) for p in SELF_CHECKS):
        return None
    for rule in SCENARIOS:
        if re.search(rule.pattern, short):
            return rule
    function = short.split("[", 1)[0]
    return Scenario(OTHER, f"`{function}`", re.escape(function) + r"(\[|$)")


# -- recording (pytest side) -------------------------------------------------------------


@dataclass
class Recorder:
    """One pytest session's records; :meth:`write` puts them in ``directory`` once."""

    directory: Path | None
    scenarios: dict[str, dict[str, str]] = field(default_factory=dict)
    suites: list[dict[str, Any]] = field(default_factory=list)
    written: Path | None = None

    @classmethod
    def from_env(cls) -> Recorder:
        value = os.environ.get(ENV, "").strip()
        return cls(Path(value) if value else None)

    @property
    def enabled(self) -> bool:
        return self.directory is not None

    def scenario(self, node: str, broker: str, outcome: str, reason: str = "") -> None:
        """The node's outcome (a later phase's ``fail`` or ``skip`` overrides ``pass``)."""
        rule = scenario_for(node)
        if not self.enabled or rule is None:
            return
        if outcome not in OUTCOMES or broker not in (*BROKERS, "both"):
            raise CompatTableError(f"bad record for {node}: {broker} {outcome}")
        old = self.scenarios.get(node)
        if old is not None and old["outcome"] != "pass" and outcome == "pass":
            return
        self.scenarios[node] = {
            "node": node,
            "client": rule.client,
            "feature": rule.feature,
            "broker": broker,
            "outcome": outcome,
            "reason": reason,
        }

    def suite(
        self, node: str, client: str, form: str, broker: str, outcomes: Mapping[str, str]
    ) -> None:
        """A client suite run's per-test outcomes (``pass``/``fail``/``skip``)."""
        if not self.enabled:
            return
        bad = sorted(t for t, o in outcomes.items() if o not in OUTCOMES)
        if bad or broker not in BROKERS:
            raise CompatTableError(f"bad suite record for {node}: {broker} {bad}")
        self.suites.append(
            {
                "node": node,
                "client": client,
                "form": form,
                "broker": broker,
                "outcomes": dict(sorted(outcomes.items())),
            }
        )

    def write(self, command: str, versions: Mapping[str, str]) -> Path | None:
        """Write the file (once; nothing when disabled or nothing was recorded)."""
        if self.directory is None or self.written or not (self.scenarios or self.suites):
            return self.written
        self.directory.mkdir(parents=True, exist_ok=True)
        now = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        path = self.directory / f"run-{stamp}-{os.getpid()}.json"
        doc = {
            "format": FORMAT,
            "source": "run",
            "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
            "command": command,
            "versions": dict(sorted(versions.items())),
            "scenarios": [self.scenarios[n] for n in sorted(self.scenarios)],
            "suites": self.suites,
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        self.written = path
        return path


RECORDER = Recorder.from_env()
"""The session's recorder, shared by the conftests that record (one per process)."""


def client_versions() -> dict[str, str]:
    """Versions of the clients the scenarios use, as installed here (missing ones left out)."""
    from importlib import metadata

    out: dict[str, str] = {}
    for dist in ("confluent-kafka", "kafka-python", "aiokafka"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    try:
        import confluent_kafka

        out["librdkafka (confluent-kafka)"] = str(confluent_kafka.libversion()[0])
    except ImportError:
        pass
    from riverbed.testing.kafka_reference import DEFAULT_KAFKA_VERSION

    out["Apache Kafka reference"] = DEFAULT_KAFKA_VERSION
    try:
        from riverbed.testing.kafka_go import KAFKA_REFERENCE_VERSION

        out["Apache Kafka reference (kafka-go's suite)"] = KAFKA_REFERENCE_VERSION
    except ImportError:
        pass
    out["Java kafka-clients"] = DEFAULT_KAFKA_VERSION  # JavaClient.build's default
    kcat = shutil.which("kcat")
    if kcat is not None:
        try:
            text = subprocess.run(
                [kcat, "-V"], capture_output=True, text=True, timeout=30, check=False
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        match = re.search(r"Version (\S+) \(.*?librdkafka (\S+)", text)
        if match:
            out["kcat"] = f"{match.group(1)} (librdkafka {match.group(2)})"
    return out


# -- reading and rendering ---------------------------------------------------------------


@dataclass
class Results:
    """What :func:`load_results` gathered: the winning records and their sources."""

    scenarios: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> record
    suites: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    manual: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    runs: list[dict[str, Any]] = field(default_factory=list)  # recorded, command, versions


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CompatTableError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CompatTableError(f"{path}: not a compat results file (format {FORMAT})")
    if doc.get("source") not in ("run", "manual"):
        raise CompatTableError(f"{path}: source must be 'run' or 'manual'")
    return doc


def _files(sources: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for source in sources:
        if source.is_dir():
            out.extend(sorted(source.glob("*.json")))
        elif source.is_file():
            out.append(source)
        else:
            raise CompatTableError(f"{source}: no such file or directory")
    return out


def load_results(sources: Iterable[Path]) -> Results:
    """Read the results files (directories: their ``*.json``); see the module docstring."""
    results = Results()
    docs = [(p, _read(p)) for p in _files(sources)]
    runs = sorted((d for _p, d in docs if d["source"] == "run"), key=lambda d: d["recorded"])
    # The newest run with a non-skipped node of a test file on a broker holds that file and
    # broker: older runs' nodes there are dropped (renamed or removed tests do not linger).
    holder: dict[tuple[str, str], int] = {}
    for index, doc in enumerate(runs):
        for rec in doc.get("scenarios", []):
            if rec["outcome"] != "skip":
                holder[(rec["node"].split("::", 1)[0], rec["broker"])] = index
    source: dict[int, int] = {}  # id(winning record) -> index of its run
    for index, doc in enumerate(runs):
        for rec in doc.get("scenarios", []):
            if holder.get((rec["node"].split("::", 1)[0], rec["broker"]), index) > index:
                continue
            old = results.scenarios.get(rec["node"])
            if old is None or rec["outcome"] != "skip" or old["outcome"] == "skip":
                results.scenarios[rec["node"]] = rec
                source[id(rec)] = index
        for rec in doc.get("suites", []):
            results.suites[(rec["client"], rec["form"], rec["broker"])] = rec
            source[id(rec)] = index
    winners = [*results.scenarios.values(), *results.suites.values()]
    used = sorted({source[id(rec)] for rec in winners})
    results.runs = [
        {k: runs[i][k] for k in ("recorded", "command", "versions") if k in runs[i]} for i in used
    ]
    for path, doc in docs:
        if doc["source"] != "manual":
            continue
        for rec in doc.get("records", []):
            missing = {"client", "feature", "broker", "result", "date", "command"} - set(rec)
            if missing or rec["broker"] not in BROKERS:
                raise CompatTableError(f"{path}: manual record lacks {sorted(missing)}")
            results.manual[(rec["client"], rec["feature"], rec["broker"])] = rec
    return results


def _param(node: str) -> str:
    match = re.search(r"\[(.*)\]$", node)
    if not match:
        return node.rsplit("::", 1)[-1]
    parts = [p for p in match.group(1).split("-") if p not in BROKERS]
    return "-".join(parts) or node.rsplit("::", 1)[-1]


def scenario_cell(records: Sequence[Mapping[str, Any]]) -> str:
    """``pass`` / ``pass (5)``; else counts, failures named: ``1 fail (`zstd`), 4 pass``."""
    if not records:
        return NOT_RUN
    by: dict[str, list[Mapping[str, Any]]] = {o: [] for o in OUTCOMES}
    for rec in records:
        by[rec["outcome"]].append(rec)
    total = len(records)
    if len(by["pass"]) == total:
        return "pass" if total == 1 else f"pass ({total})"
    if len(by["skip"]) == total:
        reasons = sorted({r.get("reason") or "" for r in by["skip"]} - {""})
        return "skip" + (f": {reasons[0]}" if reasons else "")
    parts = []
    if by["fail"]:
        names = ", ".join(f"`{_param(r['node'])}`" for r in by["fail"][:4])
        more = ", …" if len(by["fail"]) > 4 else ""
        parts.append(f"**{len(by['fail'])} fail** ({names}{more})")
    parts += [f"{len(by[o])} {o}" for o in ("pass", "skip") if by[o]]
    return ", ".join(parts)


def suite_cell(outcomes: Mapping[str, str], note: str = "") -> str:
    """``148 pass, 1 fail (`TestX`), 7 skip`` (failing tests named, up to 4); one test:
    its outcome."""
    if not outcomes:
        return NOT_RUN
    if len(outcomes) == 1:
        return next(iter(outcomes.values()))
    counts = {o: sorted(t for t, v in outcomes.items() if v == o) for o in OUTCOMES}
    parts = []
    for outcome in OUTCOMES:
        tests = counts[outcome]
        if not tests:
            continue
        text = f"{len(tests)} {outcome}"
        if outcome == "fail" or (outcome == "skip" and len(outcomes) == len(tests)):
            text += " (" + ", ".join(f"`{t}`" for t in tests[:4])
            text += ", …)" if len(tests) > 4 else ")"
        parts.append(text)
    return ", ".join(parts) + note


def _manual_cell(rec: Mapping[str, Any]) -> str:
    return f"{rec['result']} *(recorded manually, {rec['date']})*"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table_rows(
    results: Results, used_manual: set[tuple[str, str, str]] | None = None
) -> list[tuple[str, str, str, str]]:
    """``(client, feature, riverbed cell, kafka cell)`` for every row, in table order;
    the keys of the manual records shown are added to ``used_manual``."""
    used = used_manual if used_manual is not None else set()
    rows: list[tuple[str, str, str, str]] = []
    by_rule: dict[Scenario, list[Mapping[str, Any]]] = {rule: [] for rule in SCENARIOS}
    for node, rec in sorted(results.scenarios.items()):
        rule = scenario_for(node)
        if rule is not None:
            by_rule.setdefault(rule, []).append(rec)
    others = sorted((r for r in by_rule if r not in SCENARIOS), key=lambda r: r.feature)
    for rule in (*SCENARIOS, *others):
        cells = []
        for broker in BROKERS:
            recs = [r for r in by_rule[rule] if r["broker"] in (broker, "both")]
            key = (rule.client, rule.feature, broker)
            if recs or key not in results.manual:
                cell = scenario_cell(recs)
                if recs and all(r["broker"] == "both" for r in recs) and cell.startswith("pass"):
                    cell = "identical" + cell[4:]  # a differential: the same on both
                cells.append(cell)
            else:
                cells.append(_manual_cell(results.manual[key]))
                used.add(key)
        rows.append((rule.client, rule.feature, cells[0], cells[1]))
    for sf in SUITE_FEATURES:
        cells = []
        for broker in BROKERS:
            run = results.suites.get((sf.client, sf.form, broker))
            key = (sf.client, sf.feature, broker)
            if run is not None:
                outcomes = {t: o for t, o in run["outcomes"].items() if re.search(sf.pattern, t)}
                cells.append(suite_cell(outcomes))
            elif key in results.manual:
                cells.append(_manual_cell(results.manual[key]))
                used.add(key)
            else:
                cells.append(NOT_RUN)
        rows.append((sf.client, sf.feature, cells[0], cells[1]))
    return rows


def render_table(results: Results) -> str:
    """The Markdown between the markers (no trailing blank line)."""
    lines = [
        "| client | feature | Riverbed | Kafka |",
        "|---|---|---|---|",
    ]
    used: set[tuple[str, str, str]] = set()
    for client, feature, riverbed, kafka in table_rows(results, used):
        cells = " | ".join(_escape(c) for c in (client, feature, riverbed, kafka))
        lines.append(f"| {cells} |")
    lines.append("")
    lines.append("Sources:")
    lines.append("")
    for run in results.runs:
        versions = ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items())
        lines.append(
            f"* run {run.get('recorded', '?')}: `{run.get('command', '?')}`"
            + (f" ({versions})" if versions else "")
        )
    seen: set[tuple[str, str]] = set()
    for key, rec in results.manual.items():
        mark = (rec["date"], rec["command"])
        if key not in used:
            continue  # a recorded run covers it
        if mark not in seen:
            seen.add(mark)
            lines.append(
                f"* recorded manually {rec['date']}: `{rec['command']}`"
                + (f" — {rec['note']}" if rec.get("note") else "")
            )
    if not results.runs and not used:
        lines.append("* none")
    return "\n".join(lines)


def replace_between_markers(document: str, table: str) -> str:
    """``document`` with the text between :data:`BEGIN` and :data:`END` replaced."""
    start = document.find(BEGIN)
    stop = document.find(END)
    if start < 0 or stop < 0 or stop < start or document.count(BEGIN) != 1:
        raise CompatTableError(f"the document needs exactly one {BEGIN} ... {END} pair")
    return document[: start + len(BEGIN)] + "\n" + table + "\n" + document[stop:]


def regenerate(doc_path: Path, sources: Iterable[Path]) -> bool:
    """Rewrite the table in ``doc_path`` from ``sources``; True when the file changed."""
    try:
        before = doc_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CompatTableError(f"{doc_path}: {exc.strerror}") from None
    after = replace_between_markers(before, render_table(load_results(sources)))
    if after != before:
        doc_path.write_text(after, encoding="utf-8")
    return after != before
