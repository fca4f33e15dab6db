"""Driver kills of the running ``enrich`` and ``timeline`` examples (marked
``pipeline_cli``: child processes, two JVM starts per test; 3.5 and 4.7 min at load 23 on 2 cores)::

    .venv/bin/python -m pytest -q -p no:cacheprovider -m pipeline_cli \
        tests/integration/pipelines_joins/test_driver_kill.py

Each test runs ``riverbed pipeline run NAME`` (processing-time trigger, not
``--available-now``) with a small ``maxOffsetsPerTrigger`` against a broker process,
feeds seeded input in three parts while it runs, SIGKILLs the whole process group after
a committed micro-batch while a later one is in flight and input is pending, restarts the
same command on the same checkpoint, feeds the rest and stops it with SIGTERM.  The
read_committed output must equal the batch model over the whole input: nothing lost,
nothing written twice (the exactly-once sink; a batch replayed after the kill is not
written again).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing.broker_process import wait_until

from .conftest import create_topics, drain, produce
from .joins_model import (
    MIN,
    T0,
    act,
    arrival_order,
    canonical,
    cdc_records,
    enrich,
    enrich_events,
    fold_compacted,
    repeated_records,
    timeline_changes,
    timeline_view,
)
from .pipeline_process import caught_up, committed_batches, kill_mid_batch, pipeline_run

pytestmark = [pytest.mark.pipeline_cli, pytest.mark.timeout(1200)]

USERS, TWEETS, FOLLOWS = "riverbed.main.users", "riverbed.main.tweets", "riverbed.main.follows"
CDC = {"cleanup.policy": "compact"}


def thirds(items: Sequence[Any]) -> list[Sequence[Any]]:
    """``items`` cut at 40 % and 70 %."""
    a, b = len(items) * 4 // 10, len(items) * 7 // 10
    return [items[:a], items[a:b], items[b:]]


def test_enrich_sigkill_mid_run_then_restart(broker: Any, tmp_path: Path) -> None:
    bs = broker.bootstrap_servers
    create_topics(bs, [USERS], **CDC)
    create_topics(bs, ["activity-enriched"])
    # One partition: read in arrival order.  The watermark is global, and a rate limit
    # splits a batch between partitions by backlog, so with several partitions fed while
    # the query runs one can run ahead of another by more than the 10 min of disorder.
    create_topics(bs, ["activity"], partitions=1)
    rng = random.Random(1216)
    # disorder up to exactly 10 min: the boundary the watermark delay keeps
    arrivals = arrival_order(enrich_events(rng, T0, activities=160), rng, 10 * MIN)
    changes = [v for kind, v in arrivals if kind == "c"]
    activities = [v for kind, v in arrivals if kind == "a"]
    # Every activity is released once an activity more than 10 min + 1 ms past it has
    # been read: the flush (a user with no rows) is read last and stays held.
    flush = act(999, max(a["ts"] for a in activities) + 11 * MIN, "flush")
    expected = canonical(enrich(activities, changes))
    assert sum(v["name"] is not None for _, v in enrich(activities, changes)) > 30

    def feed(part: Sequence[tuple[str, dict[str, Any]]]) -> None:
        # a part's changes before its activities: a change is never read after an
        # activity that arrived after it
        produce(bs, USERS, cdc_records([v for kind, v in part if kind == "c"]))
        produce(bs, "activity", [(str(v["user_id"]), v) for kind, v in part if kind == "a"])

    chk = tmp_path / "chk"
    args = ["enrich", "--bootstrap-server", bs, "--checkpoint", str(chk)]
    args += ["--source-option", "maxOffsetsPerTrigger=40"]
    first, second, third = thirds(arrivals)
    with pipeline_run(args, tmp_path / "run1.log") as run:
        feed(first)
        wait_until(
            lambda: (
                bool(committed_batches(chk / "enrich"))
                and len(drain(bs, "activity-enriched")) >= 10
            ),
            300,
            "a committed batch with output",
            run.still_running,
        )
        feed(second)
        kill_mid_batch(run, chk / "enrich", bs, ["activity", USERS])
    partial = canonical(drain(bs, "activity-enriched"))
    # what the killed run committed is final and right, and not everything
    assert not Counter(partial) - Counter(expected)
    assert 10 <= len(partial) < len(expected)

    with pipeline_run(args, tmp_path / "run2.log") as run:
        feed(third)
        # the flush only once everything else is read (read earlier, it would make the
        # activities still behind it late)
        wait_until(
            lambda: caught_up(chk / "enrich", bs, ["activity", USERS]),
            400,
            "the input read",
            run.still_running,
        )
        feed([("a", flush)])
        wait_until(
            lambda: len(drain(bs, "activity-enriched")) >= len(expected),
            400,
            "every activity enriched after the restart",
            run.still_running,
        )
        assert run.terminate() == 0, run.log.read_text()[-3000:]
    actual = canonical(drain(bs, "activity-enriched"))
    missing, extra = Counter(expected) - Counter(actual), Counter(actual) - Counter(expected)
    assert (sorted(missing.elements()), sorted(extra.elements())) == ([], [])


def test_timeline_sigkill_mid_run_then_restart(broker: Any, tmp_path: Path) -> None:
    bs = broker.bootstrap_servers
    create_topics(bs, [TWEETS, FOLLOWS, "timelines"], **CDC)
    tweets, follows = timeline_changes(random.Random(1217), T0, steps=300)
    expected = timeline_view(tweets, follows)
    assert len(expected) > 30

    def feed(part: int) -> None:
        produce(bs, TWEETS, cdc_records(thirds(tweets)[part], ("id",)))
        produce(bs, FOLLOWS, cdc_records(thirds(follows)[part], ("follower", "followee")))

    chk = tmp_path / "chk"
    args = ["timeline", "--bootstrap-server", bs, "--checkpoint", str(chk)]
    args += ["--source-option", "maxOffsetsPerTrigger=50"]
    with pipeline_run(args, tmp_path / "run1.log") as run:
        feed(0)
        wait_until(
            lambda: bool(committed_batches(chk / "timeline")) and bool(drain(bs, "timelines")),
            300,
            "a committed batch with output",
            run.still_running,
        )
        feed(1)
        kill_mid_batch(run, chk / "timeline", bs, [TWEETS, FOLLOWS])
    partial = drain(bs, "timelines")
    assert partial and fold_compacted(partial) != expected
    assert repeated_records(partial) == []

    with pipeline_run(args, tmp_path / "run2.log") as run:
        feed(2)
        wait_until(
            lambda: fold_compacted(drain(bs, "timelines")) == expected,
            400,
            "the view of every change after the restart",
            run.still_running,
        )
        assert run.terminate() == 0, run.log.read_text()[-3000:]
    final = drain(bs, "timelines")
    assert fold_compacted(final) == expected
    # a key is written only when its pair changed: a repeat is a batch written twice
    assert repeated_records(final) == []
