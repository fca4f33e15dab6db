"""A Spark driver for the riverbed-jvm tests: one SparkSession with the JVM reader on its
classpath, in its own process (pytest's process may already hold a SparkSession without it,
and a JVM holds one SparkContext).

Usage: ``.venv/bin/python jvm_driver.py CASES_JSON OUT_JSON``.  ``CASES_JSON`` is a file
holding ``{name: {"format": ..., "options": {...}}}``; every case is read with
``spark.read.format(format).options(**options).load().collect()`` and ``OUT_JSON``
receives ``{name: {"rows": [...]}}`` (each row a list: key, value as latin-1 text or
null, topic, partition, offset, timestamp epoch ms, timestampType, headers as
``[[key, value], ...]`` or null) or ``{name: {"error": "<class>: <first line>"}}``.
Exits 0 when every case ran (errors included), 1 when the session could not start.

A case with ``"kind": "stream"`` reads ``spark.readStream`` instead, with
``trigger(availableNow=True)`` and ``checkpointLocation`` ``CHECKPOINT``, into a parquet
file sink at ``OUTPUT`` (or, when the case has a ``sink``, into
``writeStream.format(sink["format"]).options(**sink["options"])`` after selecting
``sink["columns"]``); ``"then"``: rows ``[[key, value, partition], ...]`` written to
``then_topic`` by a batch ``df.write.format("riverbed-jvm")`` after the first run, and the
query run again on the same checkpoint (``then_create``: N partitions of a new topic
``then_topic``, created first).  Its result: ``{"rows": [...], "batches": N}``
(the parquet output; ``batches``: micro-batches that read rows, all runs together) or,
with a ``sink``, ``{"batches": N}``.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC
from typing import Any

from riverbed.spark.session import local_session


def _text(data: bytes | bytearray | None) -> str | None:
    return None if data is None else bytes(data).decode("latin-1")


def _row(row: Any) -> list[Any]:
    stamp = row["timestamp"]
    millis = None if stamp is None else round(stamp.replace(tzinfo=UTC).timestamp() * 1000)
    out = [
        _text(row["key"]),
        _text(row["value"]),
        row["topic"],
        row["partition"],
        row["offset"],
        millis,
        row["timestampType"],
    ]
    if "headers" in row.__fields__:
        headers = row["headers"]
        out.append(None if headers is None else [[h["key"], _text(h["value"])] for h in headers])
    return out


def _order(row: list[Any]) -> tuple[str, int, int]:
    return (row[2], row[3], row[4])


def _first_line(exc: BaseException) -> str:
    """``<class>: <first line>``; for a Java exception, of its root cause."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    if java is not None:
        while java.getCause() is not None:
            java = java.getCause()
        name, text = java.getClass().getSimpleName(), str(java.getMessage() or "")
    else:
        name, text = type(exc).__name__, str(exc)
    text = text.strip()
    return name + ": " + (text.splitlines()[0] if text else "")


def _run_stream(spark: Any, case: dict[str, Any]) -> int:
    """One availableNow run of a stream case; the micro-batches that read rows."""
    frame = spark.readStream.format(case["format"]).options(**case["options"]).load()
    sink = case.get("sink")
    if sink is not None:
        writer = frame.select(*sink["columns"]).writeStream.format(sink["format"])
        writer = writer.options(**sink["options"])
    else:
        writer = frame.writeStream.format("parquet").option("path", case["output"])
    query = (
        writer.option("checkpointLocation", case["checkpoint"]).trigger(availableNow=True).start()
    )
    query.awaitTermination()  # raises the query's failure
    return sum(1 for p in query.recentProgress if p["numInputRows"] > 0)


def _stream_case(spark: Any, case: dict[str, Any]) -> dict[str, Any]:
    batches = _run_stream(spark, case)
    if case.get("then"):
        if case.get("then_create"):
            from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

            admin = AdminClient({"bootstrap.servers": case["options"]["kafka.bootstrap.servers"]})
            new = NewTopic(case["then_topic"], case["then_create"], 1)
            for future in admin.create_topics([new]).values():
                future.result(60)
        rows = [(k.encode(), v.encode(), p) for k, v, p in case["then"]]
        more = spark.createDataFrame(rows, "key binary, value binary, partition int")
        more.write.format("riverbed-jvm").mode("append").option(
            "kafka.bootstrap.servers", case["options"]["kafka.bootstrap.servers"]
        ).option("topic", case["then_topic"]).save()
        batches += _run_stream(spark, case)
    if case.get("sink") is not None:
        return {"batches": batches}
    found = spark.read.parquet(case["output"]).collect()
    return {"rows": sorted((_row(r) for r in found), key=_order), "batches": batches}


def main() -> int:
    with open(sys.argv[1]) as cases_file:
        cases = json.load(cases_file)
    spark = local_session("riverbed-jvm-tests", jvm_reader=True)
    results: dict[str, dict[str, Any]] = {}
    try:
        for name, case in cases.items():
            try:
                if case.get("kind") == "stream":
                    results[name] = _stream_case(spark, case)
                    continue
                reader = spark.read.format(case["format"]).options(**case["options"])
                rows = reader.load().collect()
                results[name] = {"rows": sorted((_row(r) for r in rows), key=_order)}
            except Exception as exc:
                results[name] = {"error": _first_line(exc)}
    finally:
        spark.stop()
    with open(sys.argv[2], "w") as out:
        json.dump(results, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
