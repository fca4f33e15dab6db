"""Clock-skew correction on Spark (riverbed.pipelines.clock_skew): devices whose clocks
are off by known amounts; corrected times land within the network delay of the truth."""

from __future__ import annotations

import random

from pyspark.sql import SparkSession

from riverbed.pipelines.clock_skew import correct_per_device, correct_per_event

SKEWS = {"behind-5min": 300_000, "ahead-3min": -180_000, "exact": 0}
MAX_DELAY = 200


def _events(seed: int) -> list[tuple[str, int, int, int, int]]:
    """``(device, true_ts, event_ts, send_ts, receive_ts)``: the device's clock reads
    ``server - skew``; sent 0-5 s after the event, 0-200 ms on the wire."""
    rng = random.Random(seed)
    rows = []
    for device, skew in SKEWS.items():
        for _ in range(40):
            true = 1_700_000_000_000 + rng.randint(0, 3_600_000)
            sent = true + rng.randint(0, 5_000)
            rows.append((device, true, true - skew, sent - skew, sent + rng.randint(0, MAX_DELAY)))
    return rows


def test_hand_written_case(spark: SparkSession) -> None:
    df = spark.createDataFrame(
        [("d", 1_000, 1_500, 301_550), ("d", 2_000, 2_100, 302_300), ("d", 3_000, 3_000, 303_010)],
        "device_id string, event_ts long, send_ts long, receive_ts long",
    )
    per_event = [r.corrected_ts for r in correct_per_event(df).orderBy("event_ts").collect()]
    assert per_event == [301_050, 302_200, 303_010]
    # offsets 300_050, 300_200, 300_010: median 300_050
    per_device = correct_per_device(df).orderBy("event_ts").collect()
    assert [r.offset_ms for r in per_device] == [300_050] * 3
    assert [r.corrected_ts for r in per_device] == [301_050, 302_050, 303_050]


def test_known_skews(spark: SparkSession) -> None:
    rows = _events(7)
    df = spark.createDataFrame(
        rows, "device_id string, true_ts long, event_ts long, send_ts long, receive_ts long"
    )
    for r in correct_per_event(df).collect():
        assert 0 <= r.corrected_ts - r.true_ts <= MAX_DELAY
    out = correct_per_device(df).collect()
    for r in out:
        assert 0 <= r.offset_ms - SKEWS[r.device_id] <= MAX_DELAY
        assert 0 <= r.corrected_ts - r.true_ts <= MAX_DELAY
    assert len(out) == len(rows)


def test_per_event_on_a_stream(spark: SparkSession, tmp_path: object) -> None:
    """Stateless, so a stream gives the batch answer (files arrive shuffled)."""
    from pathlib import Path

    base = Path(str(tmp_path))
    rows = _events(3)
    random.Random(3).shuffle(rows)
    schema = "device_id string, true_ts long, event_ts long, send_ts long, receive_ts long"
    for i in range(0, len(rows), 40):
        spark.createDataFrame(rows[i : i + 40], schema).write.json(str(base / "in" / f"f{i}"))
    stream = spark.readStream.schema(schema).json(str(base / "in" / "*"))
    got: list[tuple[str, int, int]] = []

    def collect(batch: object, _: int) -> None:
        got.extend((r.device_id, r.true_ts, r.corrected_ts) for r in batch.collect())  # type: ignore[attr-defined]

    query = (
        correct_per_event(stream)
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(base / "chk"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300)
    expected = correct_per_event(spark.createDataFrame(rows, schema)).collect()
    assert sorted(got) == sorted((r.device_id, r.true_ts, r.corrected_ts) for r in expected)
