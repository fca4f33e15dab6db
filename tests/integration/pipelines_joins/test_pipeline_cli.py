"""``riverbed pipeline`` as a user runs it: a child process started from a plain
environment (no PYSPARK_PYTHON): the one-line errors; and, marked ``pipeline_cli``
(a JVM start per run, ~5 min in all)::

    .venv/bin/python -m pytest -q -p no:cacheprovider -m pipeline_cli \
        tests/integration/pipelines_joins/test_pipeline_cli.py

``--available-now``, run-until-SIGTERM, and a SIGKILLed run restarted on its checkpoint
whose output (exactly-once sink) equals the batch model: no record lost or doubled."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from riverbed.pipelines.examples import EXAMPLES
from riverbed.testing.broker_process import free_port, wait_until

from .conftest import drain, produce
from .joins_model import (
    MIN,
    T0,
    canonical,
    envelope,
    final_watermark,
    search_clicks,
    search_clicks_input,
)
from .pipeline_process import cli, pipeline_run


def test_list_unknown_name_and_unreachable_broker(tmp_path: Path) -> None:
    listed = cli("list", timeout_s=120)
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines()}
    assert {"search-clicks", "enrich", "timeline"} <= names

    unknown = cli("run", "nope", "--checkpoint", str(tmp_path / "c"), timeout_s=120)
    assert unknown.returncode == 2
    known = ", ".join(sorted(EXAMPLES))
    assert unknown.stderr.strip().splitlines() == [
        f"riverbed: error: no example pipeline 'nope' (known: {known})"
    ]

    server = f"127.0.0.1:{free_port()}"
    args = ("run", "enrich", "--bootstrap-server", server, "--checkpoint", str(tmp_path / "c"))
    unreachable = cli(*args, timeout_s=120)
    assert unreachable.returncode == 1
    lines = unreachable.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"riverbed: error: cannot reach a broker at {server}"
    )


@pytest.mark.pipeline_cli
def test_available_now_from_a_plain_shell(broker: Any, tmp_path: Path) -> None:
    bs = broker.bootstrap_servers
    produce(bs, "searches", [("s1", {"search_id": "s1", "user_id": 5, "query": "x", "ts": T0})])
    produce(bs, "clicks", [("s1", {"search_id": "s1", "url": "u", "ts": T0 + MIN})])
    args = ("search-clicks", "--bootstrap-server", bs, "--checkpoint", str(tmp_path / "chk"))
    done = cli("run", *args, "--available-now")
    assert done.returncode == 0, done.stderr[-3000:]
    value = {"search_id": "s1", "user_id": 5, "query": "x", "clicked": True, "url": "u"}
    value |= {"search_ts": T0, "click_ts": T0 + MIN}
    assert canonical(drain(bs, "search-clicks")) == canonical([("s1", value)])
    assert (tmp_path / "chk" / "search-clicks" / "offsets").is_dir()


@pytest.mark.pipeline_cli
def test_runs_until_sigterm_and_holds_activity_until_the_watermark(
    broker: Any, tmp_path: Path
) -> None:
    bs = broker.bootstrap_servers
    user = {"id": 1, "name": "ann", "country": "uk"}
    produce(bs, "riverbed.main.users", [({"id": 1}, envelope("c", None, user, T0))])
    args = ["enrich", "--bootstrap-server", bs, "--checkpoint", str(tmp_path / "chk")]
    with pipeline_run(args, tmp_path / "run.log") as run:
        first = {"user_id": 1, "action": "a", "ts": T0 + MIN}
        later = {"user_id": 1, "action": "b", "ts": T0 + 15 * MIN}
        produce(bs, "activity", [("1", first), ("1", later)])
        # first is emitted once the watermark (15 min - 10 min - 1 ms) passes it; later is
        # held
        expected = [("1", {**first, "name": "ann", "country": "uk"})]
        wait_until(
            lambda: canonical(drain(bs, "activity-enriched")) == canonical(expected),
            300,
            "the first activity enriched",
            run.still_running,
        )
        # The state while the query runs: the version, and the activity still held.
        shown = cli("state", "enrich", "--checkpoint", str(tmp_path / "chk"), "--key", "1")
        assert shown.returncode == 0, shown.stderr[-3000:]
        (entry,) = [json.loads(line) for line in shown.stdout.splitlines()]
        assert [v["row"] for v in entry["versions"]] == [{"name": "ann", "country": "uk"}]
        assert entry["pending"] == [later]
        assert run.terminate() == 0, run.log.read_text()[-3000:]
    assert canonical(drain(bs, "activity-enriched")) == canonical(expected)


@pytest.mark.pipeline_cli
def test_sigkill_mid_run_then_restart_writes_each_record_once(broker: Any, tmp_path: Path) -> None:
    bs = broker.bootstrap_servers
    searches, clicks, arrivals = search_clicks_input(random.Random(1214), T0)
    for topic in ("searches", "clicks"):
        produce(bs, topic, [(str(v["search_id"]), v) for t, v in arrivals if t == topic])
    expected = search_clicks(searches, clicks, final_watermark(searches, clicks))
    args = ["search-clicks", "--bootstrap-server", bs, "--checkpoint", str(tmp_path / "chk")]
    small = ["--source-option", "maxOffsetsPerTrigger=30"]
    with pipeline_run([*args, *small], tmp_path / "run.log") as run:
        wait_until(
            lambda: len(drain(bs, "search-clicks")) >= 20,
            300,
            "some output before the kill",
            run.still_running,
        )
        run.kill()  # the driver, its JVM and Python workers
    partial = drain(bs, "search-clicks")
    assert len(partial) >= 20
    done = cli("run", *args, *small, "--available-now")
    assert done.returncode == 0, done.stderr[-3000:]
    assert canonical(drain(bs, "search-clicks")) == canonical(expected)
