"""Stored queries on Spark (riverbed.pipelines.stored_queries): query changes take effect
from the micro-batch that reads them, without a restart of the logic, and survive
restarts (each micro-batch is one availableNow run from the checkpoint)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from riverbed.pipelines.stored_queries import QueryIndex, match_stored_queries

DISK = json.dumps({"terms": ["disk", "full"]})
ERRORS = json.dumps({"conditions": [{"field": "level", "op": "=", "value": "error"}]})

# each micro-batch: (query changes, events)
BATCHES: list[tuple[list[tuple[str, str | None]], list[dict[str, Any]]]] = [
    ([("disk", DISK)], [{"id": 1, "text": "disk full", "level": "error"}]),
    ([("errors", ERRORS)], [{"id": 2, "text": "Disk is FULL", "level": "error"}]),
    ([("disk", None)], [{"id": 3, "text": "disk full", "level": "error"}]),
    ([], [{"id": 4, "text": "all good", "level": "info"}, {"id": 5, "level": "error"}]),
]
EXPECTED = [
    [("disk", 1)],
    [("disk", 2), ("errors", 2)],
    [("errors", 3)],  # the delete applies before this batch's events
    [("errors", 5)],
]


@pytest.mark.slow
@pytest.mark.parametrize("buckets", [1, 3])
def test_changes_apply_from_the_next_micro_batch(
    spark: SparkSession, tmp_path: Path, buckets: int
) -> None:
    (tmp_path / "q").mkdir()
    (tmp_path / "e").mkdir()
    model = QueryIndex()
    for n, (changes, events) in enumerate(BATCHES):
        lines = [
            json.dumps({"key": k, "value": v, "offset": i}) for i, (k, v) in enumerate(changes)
        ]
        (tmp_path / "q" / f"{n:04d}.json").write_text("".join(line + "\n" for line in lines))
        (tmp_path / "e" / f"{n:04d}.json").write_text(
            "".join(json.dumps({"value": json.dumps(e), "offset": n}) + "\n" for e in events)
        )
        got: list[Any] = []
        queries = spark.readStream.schema("key string, value string, offset long").json(
            str(tmp_path / "q")
        )
        stream = spark.readStream.schema("value string, offset long").json(str(tmp_path / "e"))
        query = (
            match_stored_queries(queries, stream, buckets=buckets, order_col="offset")
            .writeStream.outputMode("append")
            .foreachBatch(lambda df, _, got=got: got.extend(df.collect()))
            .option("checkpointLocation", str(tmp_path / "chk"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(300)
        assert query.exception() is None
        matches = sorted((r.key, json.loads(r.value)["event"]["id"]) for r in got)
        assert all(json.loads(r.value)["query_id"] == r.key for r in got)
        assert matches == EXPECTED[n]
        for qid, text in changes:
            model.apply(qid, text)
        assert matches == sorted((q, e["id"]) for e in events for q in model.match(e))
