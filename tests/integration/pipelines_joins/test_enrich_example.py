"""enrich: hand-written cases with known answers (inclusive validity, ties, deletes,
re-inserts, ids as text, the schema-wrapped envelope, a restart) and a seeded
differential test against the batch model."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from riverbed.pipelines.live_state import read_state

from .conftest import drain, produce
from .joins_model import MIN, arrival_order, canonical, envelope
from .joins_model import enrich as enrich_model

T0 = 1_700_000_000_000
USERS = "riverbed.main.users"


def change(op: str, uid: int, ts: int, name: Any = None, country: Any = None) -> Any:
    row = {"id": uid, "name": name, "country": country}
    if op == "d":
        return envelope("d", row, None, ts)
    return envelope(op, None if op == "c" else {"id": uid}, row, ts)


def cdc_records(changes: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """The topic records of ``changes``: key {"id": N}, a tombstone after each delete."""
    records: list[tuple[Any, Any]] = []
    for c in changes:
        image = c["before"] if c["op"] == "d" else c["after"]
        records.append(({"id": image["id"]}, c))
        if c["op"] == "d":
            records.append(({"id": image["id"]}, None))
    return records


def act(uid: Any, ts: int, action: str = "view") -> dict[str, Any]:
    return {"user_id": uid, "action": action, "ts": ts}


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

    # Restart on the same checkpoint: the table state carries over.
    produce(bs, USERS, cdc_records([change("u", 1, T0 + 35 * MIN, "eve", "de")]))
    later = [(act(1, T0 + 33 * MIN), "bob", "de"), (act(1, T0 + 40 * MIN), "eve", "de")]
    produce(bs, "activity", [(str(a["user_id"]), a) for a, _, _ in later])
    run_example("enrich", bs)
    expected += [out(a, name, country) for a, name, country in later]
    assert canonical(drain(bs, "activity-enriched")) == canonical(expected)

    # Interactive query: the table side, as of the last committed micro-batch.
    state = {e["key"]: e for e in read_state(spark, "enrich", tmp_path / "checkpoint")}
    assert [v["row"] for v in state["2"]["versions"]] == [
        {"name": "cy", "country": "us"},
        {"name": "cy2", "country": None},
    ]
    assert state["1"]["versions"][-1]["row"] == {"name": "eve", "country": "de"}
    assert state["3"]["versions"] == [] and state["3"]["pending"] == []
    assert read_state(spark, "enrich", tmp_path / "checkpoint", key="4")[0]["versions"][0][
        "row"
    ] == {"name": "dee", "country": "nz"}


def test_differential_seeded_with_restart(broker: Any, run_example: Any) -> None:
    rng = random.Random(1212)
    bs = broker.bootstrap_servers
    events: list[tuple[int, tuple[str, Any]]] = []
    for uid in range(1, 9):
        ts, exists = T0 + rng.randrange(30 * MIN), False
        for _ in range(rng.randrange(1, 6)):
            if exists and rng.random() < 0.25:
                c, exists = change("d", uid, ts, "x", "y"), False
            else:
                name, country = f"n{uid}-{rng.randrange(99)}", rng.choice(["uk", "fr", None])
                c, exists = change("u" if exists else "c", uid, ts, name, country), True
            events.append((ts, ("c", c)))
            ts += rng.choice([0, MIN, 7 * MIN, 20 * MIN, 45 * MIN])
    for _ in range(250):
        ts = T0 + rng.randrange(180 * MIN)
        events.append((ts, ("a", act(rng.randrange(1, 11), ts, rng.choice(["view", "buy"])))))
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
