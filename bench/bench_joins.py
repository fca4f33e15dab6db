"""The join examples (issue 12) measured: rows/s and state size, beside Spark's nearest
native formulation of the same data, in one run.

Starts an embedded Riverbed broker (or uses ``--bootstrap``), produces seeded inputs and
runs each example once with ``availableNow`` on Spark ``local[2]`` (the runner's settings:
RocksDB state store, exactly-once sink), query start included:

* **search-clicks** (``--searches`` searches, ~1.5 clicks each) beside Spark's own
  stream-stream join of the same rows, pre-parsed, streamed from Parquet into ``noop``
  (no broker, no JSON, no sink);
* **enrich** (``--activities`` activities, ``--users`` users with 3 versions each) beside
  a stream-static join of the same activities (Parquet stream) with the *final* users
  table (what Spark offers natively; it ignores the versions);
* **timeline** (``--tweets`` tweets, ``--follows`` follows); no native formulation.

rows/s = input rows / wall time of the query; state = the stateful operator's
``numRowsTotal`` and ``memoryUsedBytes`` in the last progress.  Compare within one run.

Run: ``.venv/bin/python bench/bench_joins.py [--bootstrap HOST:PORT]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from riverbed.cli.pipeline_command import SPARK_CONFIG, ensure_topics, input_topic_config
from riverbed.pipelines import search_clicks
from riverbed.pipelines.examples import ExampleOptions, example_module
from riverbed.spark.session import local_session

T0 = 1_700_000_000_000
MIN = 60_000


@contextmanager
def broker_servers(bootstrap: str | None) -> Iterator[str]:
    if bootstrap:
        yield bootstrap
        return
    from riverbed.testing.embedded import EmbeddedBroker

    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(Path(tmp)) as broker:
        yield broker.bootstrap_servers


def produce(bootstrap: str, topic: str, records: list[tuple[Any, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i, (key, value) in enumerate(records):
        producer.produce(topic, key=json.dumps(key), value=json.dumps(value))
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def envelope(op: str, before: Any, after: Any, ts: int) -> dict[str, Any]:
    return {"before": before, "after": after, "source": {"ts_ms": ts}, "op": op, "ts_ms": ts}


def state_of(query: StreamingQuery) -> str:
    progress = query.lastProgress or {}
    operators = progress.get("stateOperators") or []
    rows = sum(int(o.get("numRowsTotal", 0)) for o in operators)
    memory = sum(int(o.get("memoryUsedBytes", 0)) for o in operators)
    return f"state rows {rows:,}, state memory {memory / 1e6:.1f} MB"


def run_example(spark: SparkSession, bootstrap: str, name: str, work: Path) -> tuple[float, str]:
    module = example_module(name)
    options = ExampleOptions(bootstrap, work / f"chk-{name}", available_now=True)
    topics = {t: input_topic_config(t, options) for t in module.INPUT_TOPICS(options)}
    ensure_topics(bootstrap, {**topics, **module.OUTPUT_TOPICS(options)})
    start = time.perf_counter()
    queries = module.start(spark, options)
    for query in queries:
        query.awaitTermination()
        assert query.exception() is None, query.exception()
    return time.perf_counter() - start, state_of(queries[-1])


def run_native(frame: DataFrame, work: Path, name: str) -> tuple[float, str]:
    start = time.perf_counter()
    query = (
        frame.writeStream.format("noop")
        .option("checkpointLocation", str(work / f"native-{name}"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return time.perf_counter() - start, state_of(query)


def report(
    name: str, rows: int, riverbed: tuple[float, str], native: tuple[float, str] | None
) -> None:
    seconds, state = riverbed
    print(f"{name}: {rows:,} input rows in {seconds:.1f} s = {rows / seconds:,.0f} rows/s; {state}")
    if native is not None:
        n_seconds, n_state = native
        print(
            f"  native: {rows / n_seconds:,.0f} rows/s ({n_seconds:.1f} s); {n_state}; "
            f"ratio riverbed/native {n_seconds / seconds:.2f}"
        )


def bench_search_clicks(spark: SparkSession, bootstrap: str, n: int, work: Path) -> None:
    rng = random.Random(1)
    searches, clicks = [], []
    for i in range(n):
        ts = T0 + i * 1000
        searches.append(
            {"search_id": i, "user_id": rng.randrange(1000), "query": f"q{i % 97}", "ts": ts}
        )
        for _ in range(rng.choice([0, 1, 2, 3])):
            clicks.append(
                {"search_id": i, "url": f"u{rng.randrange(99)}", "ts": ts + rng.randrange(40 * MIN)}
            )
    produce(bootstrap, "searches", [(s["search_id"], s) for s in searches])
    produce(bootstrap, "clicks", [(c["search_id"], c) for c in clicks])
    riverbed = run_example(spark, bootstrap, "search-clicks", work)
    s_dir, c_dir = work / "searches-parquet", work / "clicks-parquet"
    spark.createDataFrame(
        [
            (
                str(s["search_id"]),
                str(s["search_id"]),
                str(s["user_id"]),
                json.dumps(s["query"]),
                s["ts"],
            )
            for s in searches
        ],
        "s_key string, s_id string, user_id string, query string, search_ts long",
    ).write.parquet(str(s_dir))
    spark.createDataFrame(
        [(str(c["search_id"]), json.dumps(c["url"]), c["ts"]) for c in clicks],
        "c_key string, url string, click_ts long",
    ).write.parquet(str(c_dir))
    s_stream = spark.readStream.schema(spark.read.parquet(str(s_dir)).schema).parquet(str(s_dir))
    c_stream = spark.readStream.schema(spark.read.parquet(str(c_dir)).schema).parquet(str(c_dir))
    native = run_native(search_clicks.join(s_stream, c_stream), work, "search-clicks")
    report("search-clicks", len(searches) + len(clicks), riverbed, native)


def bench_enrich(spark: SparkSession, bootstrap: str, n: int, users: int, work: Path) -> None:
    rng = random.Random(2)
    changes, final = [], {}
    for uid in range(users):
        for version in range(3):
            row = {"id": uid, "name": f"n{uid}-{version}", "country": rng.choice(["uk", "fr"])}
            changes.append(
                (
                    {"id": uid},
                    envelope("c" if version == 0 else "u", None, row, T0 + version * 60 * MIN),
                )
            )
            final[uid] = row
    activities = [
        {"user_id": rng.randrange(users), "action": "view", "ts": T0 + i * 1000} for i in range(n)
    ]
    produce(bootstrap, "riverbed.main.users", changes)
    produce(bootstrap, "activity", [(str(a["user_id"]), a) for a in activities])
    riverbed = run_example(spark, bootstrap, "enrich", work)
    a_dir = work / "activity-parquet"
    spark.createDataFrame(
        [(str(a["user_id"]), a["action"], a["ts"]) for a in activities],
        "key string, action string, ts long",
    ).write.parquet(str(a_dir))
    table = spark.createDataFrame(
        [(str(u), r["name"], r["country"]) for u, r in final.items()],
        "key string, name string, country string",
    )
    stream = spark.readStream.schema(spark.read.parquet(str(a_dir)).schema).parquet(str(a_dir))
    native = run_native(
        stream.join(table, "key", "left").select(F.to_json(F.struct("*"))), work, "enrich"
    )
    report("enrich", len(activities) + len(changes), riverbed, native)


def bench_timeline(
    spark: SparkSession, bootstrap: str, tweets: int, follows: int, work: Path
) -> None:
    rng = random.Random(3)
    tweet_changes = [
        (
            {"id": i},
            envelope(
                "c",
                None,
                {"id": i, "user_id": rng.randrange(200), "text": f"t{i}", "ts": T0 + i},
                T0 + i,
            ),
        )
        for i in range(tweets)
    ]
    pairs = {(rng.randrange(1000), rng.randrange(200)) for _ in range(follows)}
    follow_changes = [
        ({"follower": f, "followee": a}, envelope("c", None, {"follower": f, "followee": a}, T0))
        for f, a in pairs
    ]
    produce(bootstrap, "riverbed.main.tweets", tweet_changes)
    produce(bootstrap, "riverbed.main.follows", follow_changes)
    riverbed = run_example(spark, bootstrap, "timeline", work)
    report("timeline", len(tweet_changes) + len(follow_changes), riverbed, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="use this broker instead of an embedded one")
    parser.add_argument("--searches", type=int, default=20_000)
    parser.add_argument("--activities", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--tweets", type=int, default=10_000)
    parser.add_argument("--follows", type=int, default=3_000)
    args = parser.parse_args()
    spark = local_session("bench-joins", config=SPARK_CONFIG)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with broker_servers(args.bootstrap) as bootstrap, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bench_search_clicks(spark, bootstrap, args.searches, work)
        bench_enrich(spark, bootstrap, args.activities, args.users, work)
        bench_timeline(spark, bootstrap, args.tweets, args.follows, work)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    spark.stop()


if __name__ == "__main__":
    main()
