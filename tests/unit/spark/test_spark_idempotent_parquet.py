"""IdempotentParquetSink: one file per (query, batch id), written once (no Spark needed)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]

from riverbed.spark.idempotent import IdempotentParquetSink


def test_idempotent_parquet_sink_writes_each_batch_once(tmp_path: Path) -> None:
    sink = IdempotentParquetSink(tmp_path)
    rows = pa.table({"a": [1, 2]})
    assert sink.write_batch("q", 0, rows) is True
    assert sink.write_batch("q", 0, pa.table({"a": [3]})) is False
    files = sorted(p.name for p in (tmp_path / "q").iterdir())
    assert files == ["batch-00000000000000000000.parquet"]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    assert pq.read_table(sink.batch_path("q", 0)).column("a").to_pylist() == [1, 2]
