"""enrich: hand-written cases with known answers (inclusive validity, ties, deletes,
re-inserts, ids as text, the schema-wrapped envelope, a restart) and a seeded
differential test against the batch model."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from riverbed.pipelines.live_state import read_state

from .conftest import drain, produce
from .joins_model import (
    MIN,
    T0,
    act,
    arrival_order,
    canonical,
    cdc_records,
    change,
    enrich_events,
)
from .joins_model import enrich as enrich_model
from .pipeline_process import committed_batches

USERS = "riverbed.main.users"


def out(a: dict[str, Any], name: Any, country: Any) -> tuple[str, dict[str, Any]]:
    return (str(a["user_id"]), {**a, "name": name, "country": country})


def test_known_answers_versions_ties_deletes_and_restart(
    broker: Any, run_example: Any, spark: Any, tmp_path: Path
) -> None:
    bs = broker.bootstrap_servers
    changes = [
        change("c", 1, T0, "ann", "uk"),
        change("u", 1, T0 + 10 * MIN, "ann", "fr"),
        change("d", 1, T0 + 20 * MIN, "ann", "fr"),
        change("c", 1, T0 + 30 * MIN, "bob", "de"),
        change("c", 2, T0 + 5 * MIN, "cy", "us"),
        change("u", 2, T0 + 5 * MIN, "cy2", None),  # same ts_ms: the later change wins
    ]
    records = cdc_records(changes)
    # Kafka Connect's schema-wrapped form is read too
    records.append(({"id": 4}, {"schema": {}, "payload": change("r", 4, T0, "dee", "nz")}))
    produce(bs, USERS, records)
    activities = [
        (act(1, T0 - 1), None, None),  # before the first version
        (act(1, T0), "ann", "uk"),  # valid from source.ts_ms inclusive
        (act(1, T0 + 10 * MIN - 1), "ann", "uk"),
        (act(1, T0 + 10 * MIN), "ann", "fr"),
        (act("1", T0 + 20 * MIN), None, None),  # deleted; id 1 given as a string
        (act(1, T0 + 30 * MIN + 5), "bob", "de"),  # re-inserted
        (act(2, T0 + 5 * MIN), "cy2", None),
        (act(3, T0), None, None),  # no such user
        (act(4, T0 + MIN, "buy"), "dee", "nz"),
    ]
    produce(bs, "activity", [(str(a["user_id"]), a) for a, _, _ in activities])
    run_example("enrich", bs)
    expected = [out(a, name, country) for a, name, country in activities]
    assert canonical(drain(bs, "activity-enriched")) == canonical(expected)

    # Restart on the same checkpoint: the table state carries over.  The late boundary:
    # the watermark is the latest activity read (T0 + 30 min + 5) - 10 min - 1 ms; an
    # activity exactly 10 min behind it is kept, one 10 min + 1 ms behind is dropped.
    produce(bs, USERS, cdc_records([change("u", 1, T0 + 35 * MIN, "eve", "de")]))
    later = [
        (act(1, T0 + 33 * MIN), "bob", "de"),
        (act(1, T0 + 40 * MIN), "eve", "de"),
        (act(2, T0 + 20 * MIN + 5, "10-min-late"), "cy2", None),
    ]
    dropped = act(2, T0 + 20 * MIN + 4, "10-min-1-ms-late")
    produce(bs, "activity", [(str(a["user_id"]), a) for a in [dropped] + [a for a, _, _ in later]])
    run_example("enrich", bs)
    expected += [out(a, name, country) for a, name, country in later]
    assert canonical(drain(bs, "activity-enriched")) == canonical(expected)

    # Interactive query: the table side, as of the last committed micro-batch.
    state = {e["key"]: e for e in read_state(spark, "enrich", tmp_path / "checkpoint")}
    # user 2 saw input in the second run, with the watermark past both of its versions
    # (same source.ts_ms): the one the later change replaced is pruned
    assert [v["row"] for v in state["2"]["versions"]] == [{"name": "cy2", "country": None}]
    assert state["1"]["versions"][-1]["row"] == {"name": "eve", "country": "de"}
    assert state["3"]["versions"] == [] and state["3"]["pending"] == []
    assert read_state(spark, "enrich", tmp_path / "checkpoint", key="4")[0]["versions"][0][
        "row"
    ] == {"name": "dee", "country": "nz"}


def test_differential_seeded_with_restart(broker: Any, run_example: Any) -> None:
    rng = random.Random(1212)
    bs = broker.bootstrap_servers
    events = enrich_events(rng, T0)
    arrivals = arrival_order(events, rng)
    half = len(arrivals) // 2
    changes_read: list[dict[str, Any]] = []
    expected: list[tuple[str, dict[str, Any]]] = []
    for part in (arrivals[:half], arrivals[half:]):
        part_changes = [v for kind, v in part if kind == "c"]
        part_activities = [v for kind, v in part if kind == "a"]
        produce(bs, USERS, cdc_records(part_changes))
        produce(bs, "activity", [(str(a["user_id"]), a) for a in part_activities])
        run_example("enrich", bs)
        # --available-now emits each activity with the changes read up to its run
        changes_read += part_changes
        expected += enrich_model(part_activities, changes_read)
    actual = drain(bs, "activity-enriched")
    assert canonical(actual) == canonical(expected)
    assert sum(v["name"] is not None for _, v in actual) > 50


def test_available_now_reads_the_whole_table_first(
    broker: Any, run_example: Any, tmp_path: Path
) -> None:
    """With a rate limit an ``--available-now`` run spans several micro-batches; the users
    changelog is not limited, so activities read in the first batch already see changes
    produced after them (each activity: the version valid at its ts, as when running)."""
    bs = broker.bootstrap_servers
    users = range(1, 13)
    produce(bs, "activity", [(str(u), act(u, T0 + MIN)) for u in users])
    produce(bs, USERS, cdc_records([change("c", u, T0, f"n{u}", "uk") for u in users]))
    run_example("enrich", bs, extra_source_options=(("maxOffsetsPerTrigger", "4"),))
    assert len(committed_batches(tmp_path / "checkpoint" / "enrich")) >= 3
    expected = [out(act(u, T0 + MIN), f"n{u}", "uk") for u in users]
    assert canonical(drain(bs, "activity-enriched")) == canonical(expected)
