#!/usr/bin/env python3
"""Regenerate docs/compatibility.md's client x feature x result table from recorded runs.

    .venv/bin/python scripts/compat_table.py                # regenerate from docs/compat-results
    .venv/bin/python scripts/compat_table.py --from DIR     # ... from other results
    .venv/bin/python scripts/compat_table.py --run          # run the compat scenarios on
        # Riverbed and Kafka (+ the default franz-go/kafka-go suite forms) recording into
        # docs/compat-results, then regenerate; --suites adds the client_suites forms
        # (kafka-go in full on both, librdkafka's subset; ~25 min); --fresh drops old runs
    .venv/bin/python scripts/compat_table.py --check        # exit 1 if the table is stale

The table goes between ``<!-- compat-table:begin -->`` and ``<!-- compat-table:end -->``;
the rest of the document is untouched.  Results format and merge rules:
:mod:`riverbed.testing.compat_table`.  Exit status: 0 done (or up to date), 1 the table is
stale (``--check``) or the recorded run had failures (``--run``: the table is regenerated
anyway and shows them), 2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from riverbed.testing.compat_table import (  # noqa: E402
    ENV,
    CompatTableError,
    load_results,
    regenerate,
    render_table,
    replace_between_markers,
)

DOC = ROOT / "docs" / "compatibility.md"
RESULTS = ROOT / "docs" / "compat-results"
PATHS = ["tests/compat", "tests/integration/compat_fixes"]
DEFAULT_MARKS = "kafka or not kafka"  # names kafka: the gated Kafka variants run too
SUITE_MARKS = "kafka or not kafka or client_suites"
LONG_FORM = "tests/compat/test_franz_go_suite.py::test_franz_go_kgo_suite_default_records"


def run_tests(results: Path, suites: bool, fresh: bool, extra: list[str]) -> int:
    """pytest over the compat directories with recording into ``results``; its exit code."""
    results.mkdir(parents=True, exist_ok=True)
    if fresh:
        for old in results.glob("run-*.json"):
            old.unlink()
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "-m",
        SUITE_MARKS if suites else DEFAULT_MARKS,
        "--deselect",
        LONG_FORM,  # franz-go at 500000 records: an hour, not part of the table's runs
        *PATHS,
        *extra,
    ]
    print("+", shlex.join(command[1:]), flush=True)
    env = {**os.environ, ENV: str(results)}
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--from",
        dest="sources",
        type=Path,
        action="append",
        default=None,
        help=f"results directory or file (repeatable; default {RESULTS})",
    )
    parser.add_argument("--doc", type=Path, default=DOC, help="the document to rewrite")
    parser.add_argument("--run", action="store_true", help="run the compat tests first")
    parser.add_argument("--suites", action="store_true", help="with --run: client_suites too")
    parser.add_argument("--fresh", action="store_true", help="with --run: drop old run-*.json")
    parser.add_argument("--check", action="store_true", help="only say whether it is stale")
    parser.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args(argv)
    sources = args.sources or [RESULTS]
    try:
        rc = 0
        if args.run:
            rc = 1 if run_tests(sources[0], args.suites, args.fresh, args.pytest_args) else 0
        if args.check:
            document = args.doc.read_text(encoding="utf-8")
            table = render_table(load_results(sources))
            if replace_between_markers(document, table) != document:
                print(f"{args.doc}: the table is stale: run scripts/compat_table.py")
                return 1
            print(f"{args.doc}: the table is up to date")
            return 0
        changed = regenerate(args.doc, sources)
        print(f"{args.doc}: {'table regenerated' if changed else 'table unchanged'}")
        return rc
    except CompatTableError as exc:
        print(f"compat_table: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"compat_table: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
