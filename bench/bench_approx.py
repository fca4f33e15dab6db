"""The approx, late-policy, stored-query and clock-skew operators measured: events/s and
state, each beside a native Spark formulation in the same run.

Writes ``--events`` seeded events (``--users`` users, arrival up to 3 min out of
event-time order) as JSON files in arrival order (``--files`` of them) and reads them back
with Spark's file source, as tests/integration/pipelines_ops/ do (no broker).  On Spark
``local[2]``, 2 shuffle partitions, RocksDB state store, each stream runs with
``availableNow`` and ``maxFilesPerTrigger=1`` (one micro-batch per file, so later files
carry late events) into the ``noop`` sink; each figure is the median of ``--repeat``
runs (query start included), with the state store's largest rows and memory of any micro-batch where
there is state:

* **approx**: :func:`riverbed.pipelines.approx.windowed_approx` (HLL++, HLL sketch, GK
  and KLL percentiles per 1-minute window, 1-minute watermark) vs the exact answers in
  the same windowed aggregation (``size(collect_set)`` -- Spark refuses
  ``countDistinct`` on a stream -- and ``percentile``); plus the same two as batch jobs
  (exact with ``countDistinct``);
* **top-k (stream)**: :func:`riverbed.pipelines.approx.windowed_top_k` (top 10 users per
  1-minute window, 100 counters per window in state) vs the exact per-(window, user)
  count in Spark's windowed aggregation (the nearest native form: Spark cannot rank
  within a window on a stream);
* **late policies**: :func:`riverbed.pipelines.late_policies.late_window_counts` under
  each policy vs Spark's own ``withWatermark`` + ``window`` count (append);
* **stored queries**: :func:`riverbed.pipelines.stored_queries.match_stored_queries`
  (``--queries`` queries from a file stream) vs a stream-static join of the parsed events
  with a static queries table plus a filter (term in the text's words, level equal);
* **clock skew**: :func:`riverbed.pipelines.clock_skew.correct_per_event` vs the
  uncorrected projection (stateless).

Compare ratios within one run; on 2 shared cores figures swing with load.

Run: ``.venv/bin/python bench/bench_approx.py [--events 20000]
[--cases approx,topk,late,stored,skew]`` (default: all)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MINUTE_MS = 60_000
T0 = 1_700_000_040_000 - 1_700_000_040_000 % MINUTE_MS
WORDS = [f"w{i}" for i in range(200)]
LEVELS = ["info", "warn", "error"]
EVENT_SCHEMA = (
    "id string, user string, latency long, ts long, text string, level string,"
    " device string, event_ts long, send_ts long, receive_ts long"
)


def generate(rng: random.Random, users: int, count: int) -> list[dict[str, Any]]:
    """Events in arrival order: 30 minutes of event time, arrival up to 3 min late."""
    devices = {f"d{i}": rng.randint(-30_000, 30_000) for i in range(50)}
    out = []
    for n in range(count):
        ts = T0 + rng.randrange(30 * MINUTE_MS)
        device = f"d{rng.randrange(50)}"
        skew = devices[device]
        out.append(
            {
                "id": f"e{n}",
                "user": f"u{rng.randrange(users)}",
                "latency": int(rng.lognormvariate(4, 1)),
                "ts": ts,
                "text": " ".join(rng.choice(WORDS) for _ in range(8)),
                "level": rng.choice(LEVELS),
                "device": device,
                "event_ts": ts - skew,
                "send_ts": ts - skew + 500,
                "receive_ts": ts + 500 + rng.randrange(50),
            }
        )
    delayed = sorted((e["ts"] + rng.randrange(3 * MINUTE_MS), i, e) for i, e in enumerate(out))
    return [e for _, _, e in delayed]


def write_files(directory: Path, events: list[dict[str, Any]], files: int) -> None:
    directory.mkdir(parents=True)
    size = -(-len(events) // files)
    for n in range(files):
        chunk = events[n * size : (n + 1) * size]
        (directory / f"{n:04d}.json").write_text("".join(json.dumps(e) + "\n" for e in chunk))


def queries(rng: random.Random, count: int) -> list[tuple[str, str, str]]:
    """(query id, term, level) -- each query: one term and ``level = <level>``."""
    return [(f"q{n}", rng.choice(WORDS), rng.choice(LEVELS)) for n in range(count)]


def run_stream(build: Callable[[], Any], checkpoint: Path) -> dict[str, Any]:
    """One availableNow run of ``build()`` into the noop sink: seconds and state."""
    started = time.perf_counter()
    query = (
        build()
        .writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None, query.exception()
    seconds = time.perf_counter() - started
    rows = memory = None
    progress = [p for p in query.recentProgress if p["stateOperators"]]
    if progress:  # the largest state of any micro-batch
        rows = max(sum(s["numRowsTotal"] for s in p["stateOperators"]) for p in progress)
        memory = max(sum(s["memoryUsedBytes"] for s in p["stateOperators"]) for p in progress)
    return {"seconds": seconds, "batches": len(query.recentProgress), "rows": rows, "mem": memory}


def median_run(
    build: Callable[[], Any], work: Path, name: str, events: int, repeat: int
) -> dict[str, Any]:
    runs = [run_stream(build, work / f"chk-{name}-{r}") for r in range(repeat)]
    result = dict(runs[-1])
    result["events_per_s"] = events / statistics.median(r["seconds"] for r in runs)
    return result


def median_batch(job: Callable[[], Any], events: int, repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        job().write.format("noop").mode("overwrite").save()
        seconds.append(time.perf_counter() - started)
    return events / statistics.median(seconds)


def show(name: str, ours: dict[str, Any], native: dict[str, Any] | None) -> None:
    state = ""
    if ours["rows"] is not None:
        state = f", state {ours['rows']} rows {ours['mem']:,} B"
    line = f"{name}: ours {ours['events_per_s']:,.0f} events/s ({ours['batches']} batches{state})"
    if native is not None:
        nstate = ""
        if native["rows"] is not None:
            nstate = f", state {native['rows']} rows {native['mem']:,} B"
        line += (
            f" | native {native['events_per_s']:,.0f} events/s{nstate}"
            f" | ratio {ours['events_per_s'] / native['events_per_s']:.2f}"
        )
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=2_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--cases", default="approx,topk,late,stored,skew", help="comma-separated subset to run"
    )
    args = parser.parse_args()
    cases = set(args.cases.split(","))

    from pyspark.sql import functions as F

    from riverbed.pipelines.approx import PERCENTILES, windowed_approx, windowed_top_k
    from riverbed.pipelines.clock_skew import correct_per_event
    from riverbed.pipelines.late_policies import POLICIES, late_window_counts
    from riverbed.pipelines.stored_queries import match_stored_queries
    from riverbed.spark.session import local_session

    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")  # pandas, in workers
    rng = random.Random(args.seed)
    events = generate(rng, args.users, args.events)
    stored = queries(rng, args.queries)
    n, repeat = args.events, args.repeat
    print(f"load average before: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_files(work / "in", events, args.files)
        (work / "q").mkdir()
        (work / "q" / "0000.json").write_text(
            "".join(
                json.dumps(
                    {
                        "key": qid,
                        "value": json.dumps(
                            {
                                "terms": [term],
                                "conditions": [{"field": "level", "op": "=", "value": level}],
                            }
                        ),
                    }
                )
                + "\n"
                for qid, term, level in stored
            )
        )
        spark = local_session(
            "bench-approx",
            config={
                "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql."
                "execution.streaming.state.RocksDBStateStoreProvider",
                "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
                "spark.sql.streaming.noDataMicroBatches.enabled": "true",
            },
            register=False,
        )

        def stream() -> Any:
            return (
                spark.readStream.schema(EVENT_SCHEMA)
                .option("maxFilesPerTrigger", 1)
                .json(str(work / "in"))
            )

        def timed(frame: Any) -> Any:
            return frame.withColumn("event_time", F.timestamp_millis("ts"))

        ps = [float(p) for p in PERCENTILES]

        def exact(frame: Any, distinct: Any) -> Any:
            return frame.groupBy(F.window("event_time", "1 minute")).agg(
                F.count(F.lit(1)).alias("events"),
                distinct.alias("distinct"),
                F.percentile(F.col("latency").cast("double"), ps).alias("percentiles"),
            )

        def approx(frame: Any) -> Any:
            return windowed_approx(
                frame, "event_time", "1 minute", distinct_col="user", value_col="latency"
            )

        def batch() -> Any:
            return timed(spark.read.schema(EVENT_SCHEMA).json(str(work / "in")))

        median_batch(lambda: approx(batch()), n, 1)  # warm up the JVM
        if "approx" in cases:
            # approx vs exact
            ours = median_run(
                lambda: approx(timed(stream()).withWatermark("event_time", "1 minute")),
                work,
                "approx",
                n,
                repeat,
            )
            native = median_run(
                lambda: exact(
                    timed(stream()).withWatermark("event_time", "1 minute"),
                    F.size(F.collect_set("user")),
                ),
                work,
                "exact",
                n,
                repeat,
            )
            show("approx (stream) vs exact collect_set/percentile", ours, native)
            approx_b = median_batch(lambda: approx(batch()), n, repeat)
            exact_b = median_batch(lambda: exact(batch(), F.countDistinct("user")), n, repeat)
            print(
                f"approx (batch) {approx_b:,.0f} events/s | exact countDistinct/percentile"
                f" {exact_b:,.0f} events/s | ratio {approx_b / exact_b:.2f}",
                flush=True,
            )
        if "topk" in cases:
            ours = median_run(
                lambda: windowed_top_k(
                    timed(stream()).withWatermark("event_time", "1 minute"),
                    "event_time",
                    "user",
                    MINUTE_MS,
                    10,
                    100,
                ),
                work,
                "topk",
                n,
                repeat,
            )
            native = median_run(
                lambda: (
                    timed(stream())
                    .withWatermark("event_time", "1 minute")
                    .groupBy(F.window("event_time", "1 minute"), "user")
                    .count()
                ),
                work,
                "exact-counts",
                n,
                repeat,
            )
            show("top-k (stream) vs exact per-(window, user) counts", ours, native)
        if "late" in cases:
            # late policies vs Spark's watermark
            native = median_run(
                lambda: (
                    timed(stream())
                    .withWatermark("event_time", "1 minute")
                    .groupBy(F.window("event_time", "1 minute"))
                    .count()
                ),
                work,
                "watermark",
                n,
                repeat,
            )
            for policy in POLICIES:
                ours = median_run(
                    lambda policy=policy: late_window_counts(
                        stream().select("id", "ts"), "ts", MINUTE_MS, MINUTE_MS, policy
                    ),
                    work,
                    f"late-{policy}",
                    n,
                    repeat,
                )
                show(f"late policy {policy} vs withWatermark count", ours, native)
        if "stored" in cases:
            # stored queries vs a stream-static join
            ours = median_run(
                lambda: match_stored_queries(
                    spark.readStream.schema("key string, value string").json(str(work / "q")),
                    stream().select(F.to_json(F.struct("id", "text", "level")).alias("value")),
                ),
                work,
                "stored",
                n,
                repeat,
            )
            table = spark.createDataFrame(stored, "query_id string, term string, q_level string")

            def joined() -> Any:
                parsed = stream().select(
                    "id", "level", F.split(F.lower("text"), "[^\\w]+").alias("words")
                )
                return parsed.join(
                    F.broadcast(table),
                    F.array_contains("words", F.col("term")) & (F.col("level") == F.col("q_level")),
                ).select("query_id", "id")

            native = median_run(joined, work, "join", n, repeat)
            show(f"stored queries ({args.queries}) vs stream-static join", ours, native)
        if "skew" in cases:
            # clock skew vs the uncorrected projection
            ours = median_run(lambda: correct_per_event(stream()), work, "skew", n, repeat)
            native = median_run(
                lambda: stream().withColumn("corrected_ts", F.col("event_ts")),
                work,
                "plain",
                n,
                repeat,
            )
            show("clock skew per_event vs uncorrected", ours, native)
        spark.stop()
    print(f"load average after: {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
