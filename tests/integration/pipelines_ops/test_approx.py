"""Approximate analytics (riverbed.pipelines.approx) against exact answers: every
estimate within its documented bound (3 standard errors for the HLLs) on seeded data, a
hand-written case, and stream = batch on shuffled, late arrivals with a mid-run restart
from the checkpoint (file source, no broker)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from riverbed.pipelines.approx import (
    DEFAULT_ACCURACY,
    DEFAULT_RSD,
    KLL_RANK_ERROR,
    PERCENTILES,
    hll_standard_error,
    merge_distinct,
    top_k,
    windowed_approx,
)

MINUTE = 60_000
T0 = 1_700_000_040_000 - 1_700_000_040_000 % MINUTE
SCHEMA = "user string, latency long, ts long"


def _events(seed: int, count: int, minutes: int) -> list[tuple[str, int, int]]:
    rng = random.Random(seed)
    return [
        (
            f"u{rng.randint(0, 5 * count)}",
            int(rng.lognormvariate(4, 1)),
            T0 + rng.randint(0, minutes * MINUTE - 1),
        )
        for _ in range(count)
    ]


def _frame(spark: SparkSession, rows: list[tuple[str, int, int]]) -> DataFrame:
    return spark.createDataFrame(rows, SCHEMA).withColumn("event_time", F.timestamp_millis("ts"))


def _rank_ok(values: list[int], got: float, p: float, bound: float) -> bool:
    """Some rank of ``got`` in ``values`` is within ``bound * n`` of ``p * n``."""
    ordered = sorted(values)
    below = sum(v < got for v in ordered)
    at_or_below = sum(v <= got for v in ordered)
    target, slack = p * len(ordered), bound * len(ordered) + 1
    return below - slack <= target <= at_or_below + slack


def _check_window(window: Any, rows: list[tuple[str, int, int]]) -> None:
    users = {u for u, _, _ in rows}
    assert window.events == len(rows)
    assert abs(window.distinct_hllpp - len(users)) <= 3 * DEFAULT_RSD * len(users) + 1
    assert abs(window.distinct_hll - len(users)) <= 3 * hll_standard_error() * len(users) + 1
    latencies = [lat for _, lat, _ in rows]
    for p, gk, kll in zip(PERCENTILES, window.percentiles_gk, window.percentiles_kll, strict=True):
        assert _rank_ok(latencies, gk, p, 1 / DEFAULT_ACCURACY)
        assert _rank_ok(latencies, kll, p, KLL_RANK_ERROR)


def _by_minute(rows: list[tuple[str, int, int]]) -> dict[int, list[tuple[str, int, int]]]:
    out: dict[int, list[tuple[str, int, int]]] = {}
    for row in rows:
        out.setdefault(row[2] - row[2] % MINUTE, []).append(row)
    return out


def test_hand_written_case(spark: SparkSession) -> None:
    rows = [("a", 10, T0), ("b", 20, T0 + 1), ("a", 30, T0 + 2), ("c", 40, T0 + MINUTE)]
    out = windowed_approx(
        _frame(spark, rows), "event_time", "1 minute", distinct_col="user", value_col="latency"
    ).orderBy("window_start")
    first, second = out.collect()
    assert (first.events, first.distinct_hllpp, first.distinct_hll) == (3, 2, 2)
    assert first.percentiles_gk == [20.0, 30.0, 30.0]
    assert (second.events, second.distinct_hllpp, second.distinct_hll) == (1, 1, 1)
    assert merge_distinct(out).collect()[0].distinct_hll == 3
    assert top_k(_frame(spark, rows), "user", 1) == [("a", 2)]


def test_error_bounds_on_seeded_data(spark: SparkSession) -> None:
    rows = _events(11, count=4000, minutes=4)
    out = windowed_approx(
        _frame(spark, rows), "event_time", "1 minute", distinct_col="user", value_col="latency"
    ).collect()
    minutes = _by_minute(rows)
    assert len(out) == len(minutes)
    for window in out:
        _check_window(window, minutes[int(window.window_start.timestamp() * 1000)])
    # sketches merge: the distinct count of all four minutes, same bound
    users = len({u for u, _, _ in rows})
    merged = merge_distinct(spark.createDataFrame(out)).collect()[0].distinct_hll
    assert abs(merged - users) <= 3 * hll_standard_error() * users
    # top-k of a skewed column within n / (capacity + 1) below the truth
    skewed = [(f"p{min(int(random.Random(i).paretovariate(1.1)), 50)}", 0, T0) for i in range(2000)]
    exact = Counter(u for u, _, _ in skewed)
    got = top_k(_frame(spark, skewed), "user", 3, capacity=30)
    assert [item for item, _ in got] == [item for item, _ in exact.most_common(3)]
    for item, estimate in got:
        assert exact[item] - 2000 / 31 <= estimate <= exact[item]


@pytest.mark.slow
def test_stream_equals_batch_with_restart(spark: SparkSession, tmp_path: Path) -> None:
    delay = 2 * MINUTE
    rows = _events(5, count=600, minutes=8)
    rows.sort(key=lambda r: r[2])
    rng = random.Random(5)
    # shuffled: each event may arrive up to the allowed delay late (none dropped)
    arrivals = [r for _, r in sorted((r[2] + rng.randint(0, delay - 1), r) for r in rows)]
    for i in range(0, len(arrivals), 60):
        batch = spark.createDataFrame(arrivals[i : i + 60], SCHEMA).coalesce(1)
        batch.write.json(str(tmp_path / "staged" / f"{i:05d}"))
    got: list[Any] = []

    def run(files: list[Path]) -> None:
        for f in files:
            f.rename(tmp_path / "in" / f.name)
        stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
        events = stream.json(str(tmp_path / "in" / "*")).withColumn(
            "event_time", F.timestamp_millis("ts")
        )
        windows = windowed_approx(
            events.withWatermark("event_time", "2 minutes"),
            "event_time",
            "1 minute",
            distinct_col="user",
            value_col="latency",
        )
        query = (
            windows.writeStream.outputMode("append")
            .foreachBatch(lambda df, _: got.extend(df.collect()))
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(300)
        assert query.exception() is None

    (tmp_path / "in").mkdir()
    staged = sorted((tmp_path / "staged").iterdir())
    run(staged[: len(staged) // 2])
    emitted_before_restart = len(got)
    run(staged[len(staged) // 2 :])  # restart from the checkpoint
    assert emitted_before_restart > 0 and len(got) > emitted_before_restart
    watermark = max(r[2] for r in rows) - delay
    minutes = _by_minute(rows)
    final = sorted(m for m in minutes if m + MINUTE <= watermark)
    assert sorted(int(w.window_start.timestamp() * 1000) for w in got) == final
    batch = {
        int(w.window_start.timestamp() * 1000): w
        for w in windowed_approx(
            _frame(spark, rows), "event_time", "1 minute", distinct_col="user", value_col="latency"
        ).collect()
    }
    for window in got:
        start = int(window.window_start.timestamp() * 1000)
        # HLL++ is a function of the set: the stream's answer is the batch's
        assert (window.events, window.distinct_hllpp) == (
            batch[start].events,
            batch[start].distinct_hllpp,
        )
        _check_window(window, minutes[start])
