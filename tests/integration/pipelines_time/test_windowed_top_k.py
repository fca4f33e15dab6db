"""Streaming top-k (riverbed.pipelines.approx.windowed_top_k) with a summary small enough
to trim: every reported count within ``max_undercount`` below the exact count, the
dominant item first, one final row per closed window.

* default run: the operator's function over simulated micro-batches with a stand-in
  GroupState (state round-trips through JSON, Spark's event-time timer and late-row
  filter emulated), 20 seeds, ~1 s;
* ``-m time_examples``: on Spark over a file stream, two ``availableNow`` runs on one
  checkpoint (a restart in between), ~40-80 s.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from riverbed.pipelines.approx import WindowTopKFunction, windowed_top_k

from .group_state import FakeGroupState

MINUTE = 60_000
WINDOW = 5 * MINUTE
T0 = 1_700_000_100_000 - 1_700_000_100_000 % WINDOW


def _rows(rng: random.Random, count: int, late: int = 0) -> list[dict[str, Any]]:
    """Arrival order: disorder under 1 min, plus ``late`` rows 10 min behind (dropped)."""
    rows = []
    for _ in range(count):
        item = "hot" if rng.random() < 0.6 else f"i{min(int(rng.paretovariate(1.0)), 40)}"
        rows.append({"item": item, "ts": T0 + rng.randrange(30 * MINUTE)})
    rows.sort(key=lambda r: r["ts"] + rng.randrange(MINUTE))  # disorder < 1 min
    for _ in range(late):
        at = rng.randrange(len(rows) // 2, len(rows))
        behind = max(r["ts"] for r in rows[:at]) - 10 * MINUTE
        rows.insert(at, {"item": "late", "ts": behind, "late": True})
    return rows


def _check(rows: list[dict[str, Any]], got: list[dict[str, Any]], delay: int) -> int:
    """Assert the bounds; the number of reported counts below the exact one."""
    watermark = max(r["ts"] for r in rows) - delay
    exact: dict[int, Counter[str]] = {}
    for r in rows:
        if r.get("late"):
            continue
        exact.setdefault(r["ts"] - r["ts"] % WINDOW, Counter())[r["item"]] += 1
    closed = sorted(s for s in exact if s + WINDOW <= watermark)
    assert sorted(r["window_start"] for r in got) == closed  # each once
    trimmed = 0
    for row in got:
        counts = exact[row["window_start"]]
        assert row["window_end"] == row["window_start"] + WINDOW
        assert row["views"] == sum(counts.values())
        assert row["max_undercount"] == row["views"] // 5
        top = json.loads(row["top"])
        assert top[0]["item"] == "hot"
        for entry in top:
            true = counts[entry["item"]]
            assert true - row["max_undercount"] <= entry["count"] <= true
            trimmed += entry["count"] < true
    return trimmed


@pytest.mark.parametrize("seed", range(20))
def test_operator_bounds_over_simulated_micro_batches(seed: int) -> None:
    rng = random.Random(seed)
    rows = _rows(rng, 600, late=5)
    delay = 2 * MINUTE
    function = WindowTopKFunction(WINDOW, k=3, capacity=4)
    states: dict[int, tuple[str]] = {}
    timers: dict[int, int] = {}
    got: list[dict[str, Any]] = []
    watermark: int | None = None
    step = rng.randrange(20, 120)
    batches = [rows[i : i + step] for i in range(0, len(rows), step)] + [[]]  # + no-data
    for batch in batches:
        by_window: dict[int, list[dict[str, Any]]] = {}
        for r in batch:  # Spark hands the function late rows too
            by_window.setdefault(r["ts"] - r["ts"] % WINDOW, []).append(r)
        for start, window_rows in by_window.items():
            state = FakeGroupState(states.get(start), watermark)
            frames = iter([pd.DataFrame(window_rows)])
            got.extend(
                f for frame in function((start,), frames, state) for f in frame.to_dict("records")
            )
            if state.saved is None:
                states.pop(start, None)
                timers.pop(start, None)
                continue
            assert state.timeout == start + WINDOW - 1
            states[start], timers[start] = state.saved, state.timeout
        for start in sorted(
            s for s, t in timers.items() if watermark is not None and t < watermark
        ):
            if start in by_window:
                continue
            state = FakeGroupState(states.pop(start), watermark, timed_out=True)
            del timers[start]
            for frame in function((start,), iter([]), state):
                got.extend(frame.to_dict("records"))
            assert state.saved is None
        if batch:
            top = max(r["ts"] for r in batch) - delay
            watermark = top if watermark is None else max(watermark, top)
    # the last no-data batch fires the timers the final watermark passed
    for start in sorted(s for s, t in timers.items() if watermark is not None and t < watermark):
        for frame in function(
            (start,), iter([]), FakeGroupState(states.pop(start), watermark, timed_out=True)
        ):
            got.extend(frame.to_dict("records"))
    assert _check(rows, got, delay) > 0


@pytest.mark.time_examples
@pytest.mark.timeout(900)
def test_bounds_against_exact_counts_with_restart(spark: SparkSession, tmp_path: Path) -> None:
    rows = _rows(random.Random(11), 900, late=3)
    (tmp_path / "in").mkdir()
    got: list[Any] = []

    def run(chunks: list[list[dict[str, Any]]], first: int) -> None:
        for n, chunk in enumerate(chunks, first):
            text = "".join(json.dumps(r) + "\n" for r in chunk)
            path = tmp_path / "in" / f"{n:04d}.json"
            path.write_text(text)
            stamp = time.time() + n  # the file source reads files in mtime order
            os.utime(path, (stamp, stamp))
        events = (
            spark.readStream.schema("item string, ts long, late boolean")
            .option("maxFilesPerTrigger", 1)
            .json(str(tmp_path / "in"))
            .withColumn("event_time", F.timestamp_millis("ts"))
            .withWatermark("event_time", "2 minutes")
        )
        query = (
            windowed_top_k(events, "event_time", "item", WINDOW, k=3, capacity=4)
            .writeStream.outputMode("append")
            .foreachBatch(lambda df, _: got.extend(r.asDict() for r in df.collect()))
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(300)
        assert query.exception() is None

    chunks = [rows[i : i + 150] for i in range(0, len(rows), 150)]
    run(chunks[:3], 0)
    run(chunks[3:], 3)
    assert _check(rows, got, 2 * MINUTE) > 0  # the summary did trim: the bound was exercised
