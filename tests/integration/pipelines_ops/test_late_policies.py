"""The late-event policies on Spark (riverbed.pipelines.late_policies): each micro-batch
is one availableNow run restarted from the checkpoint (file source, no broker); the
hand-written case's exact outputs under each policy, and seeded shuffled input whose
corrected counts (update policy) equal the batch answer."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from riverbed.pipelines.late_policies import (
    POLICIES,
    LateWindowCounter,
    Output,
    Policy,
    late_window_counts,
)

SCHEMA = "id string, ts long"


def run_batches(
    spark: SparkSession, tmp_path: Path, policy: Policy, batches: list[list[int]], w: int, d: int
) -> list[list[Output]]:
    (tmp_path / "in").mkdir()
    outputs: list[list[Output]] = []
    for n, batch in enumerate(batches):
        path = tmp_path / "in" / f"{n:04d}.json"
        path.write_text("".join(json.dumps({"id": f"e{ts}", "ts": ts}) + "\n" for ts in batch))
        got: list[Any] = []
        events = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))
        query = (
            late_window_counts(events, "ts", w, d, policy)
            .writeStream.outputMode("append")
            .foreachBatch(lambda df, _, got=got: got.extend(df.collect()))
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(300)
        assert query.exception() is None
        rows = [Output(**r.asDict()) for r in got]
        # rows of one micro-batch in the counter's order (Spark keeps it within a group)
        outputs.append(rows)
    return outputs


def _plain(outputs: list[list[Output]]) -> list[list[Output]]:
    """Late rows carry the event's JSON; compare by its id."""
    return [
        [
            Output(
                o.kind, o.window_start, o.window_end, o.count, o.previous, json.loads(o.event)["id"]
            )
            if o.event
            else o
            for o in batch
        ]
        for batch in outputs
    ]


@pytest.mark.slow
@pytest.mark.parametrize("policy", POLICIES)
def test_hand_written_case(spark: SparkSession, tmp_path: Path, policy: Policy) -> None:
    batches = [[1, 12, 3], [25, 4], [8, 15, 9, 22], [35]]
    counter = LateWindowCounter(10, 5, policy)
    expected = [counter.process([(t, f"e{t}") for t in b]) for b in batches]
    assert _plain(run_batches(spark, tmp_path, policy, batches, 10, 5)) == expected


@pytest.mark.slow
def test_update_policy_equals_batch(spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(3)
    events = [rng.randint(0, 600) for _ in range(200)]
    arrivals = sorted(events, key=lambda ts: ts + rng.randint(0, 120))
    batches = [arrivals[i : i + 70] for i in range(0, len(arrivals), 70)] + [[5_000]]
    out = [o for b in run_batches(spark, tmp_path, "update", batches, 50, 40) for o in b]
    latest = {o.window_start: o.count for o in out if o.kind in ("final", "correction")}
    assert latest == dict(Counter(ts - ts % 50 for ts in events))
    assert any(o.kind == "correction" for o in out)
