"""The sessions and fraud examples measured: events/s and state, beside native Spark.

Starts an embedded Riverbed broker, produces ``--events`` page views and the same number
of logins (seeded, ``--users`` users, arrival up to 9 min out of event-time order) and,
on Spark ``local[2]`` with the RocksDB state store (as ``riverbed pipeline run``), measures:

* **pure matcher**: the fraud pattern (:mod:`riverbed.pipelines.patterns` behind the
  :mod:`riverbed.pipelines.event_order` buffer) in plain Python, events/s (no Spark);
* **stream**: each example's ``start`` with ``availableNow`` (query start, the data batch,
  the no-data batch, exactly-once sink), events/s and the state store's rows and memory
  after the run (``stateOperators`` of the data batch);
* **batch, native**: the same computation as a Spark batch job over the same topic
  (``spark.read``): ``session_window`` for sessions, window functions (three ``lag`` over
  ``user_id`` ordered by ``ts, ok``) for fraud -- the nearest native formulation, with no
  watermark, state store or Python worker.

Compare ratios within one run; on 2 shared cores figures swing with load.

Run: ``.venv/bin/python bench/bench_time_patterns.py [--events 20000]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

MINUTE_MS = 60_000
T0 = 1_700_000_000_000


def generate(rng: random.Random, users: int, count: int, kind: str) -> list[dict[str, Any]]:
    clock = {f"u{i}": T0 + rng.randrange(10 * MINUTE_MS) for i in range(users)}
    out = []
    for n in range(count):
        user = f"u{rng.randrange(users)}"
        clock[user] += rng.choice([0, 20_000, MINUTE_MS, 3 * MINUTE_MS, 40 * MINUTE_MS])
        if kind == "pageviews":
            out.append({"user_id": user, "url": f"/p{n % 50}", "ts": clock[user]})
        else:
            out.append({"user_id": user, "ok": rng.random() < 0.3, "ts": clock[user]})
    delayed = sorted(((e["ts"] + rng.randrange(9 * MINUTE_MS), i, e) for i, e in enumerate(out)))
    return [e for _, _, e in delayed]


def produce(bootstrap: str, topic: str, values: list[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for value in values:
        producer.produce(topic, key=value["user_id"], value=json.dumps(value))
        producer.poll(0)
    assert producer.flush(120) == 0


def bench_matcher(logins: list[dict[str, Any]]) -> float:
    from riverbed.pipelines.event_order import EventOrderBuffer
    from riverbed.pipelines.fraud import FRAUD, failures_first
    from riverbed.pipelines.patterns import Matcher

    started = time.perf_counter()
    buffers: dict[str, EventOrderBuffer] = {}
    matchers: dict[str, Matcher] = {}
    max_ts = 0
    for i, login in enumerate(logins):
        user = login["user_id"]
        fields = {"ok": login["ok"]}
        buffers.setdefault(user, EventOrderBuffer()).add(
            login["ts"], fields, failures_first(fields)
        )
        max_ts = max(max_ts, login["ts"])
        if i % 1000 == 999:  # a "micro-batch" every 1000 events
            for key, buffer in buffers.items():
                matcher = matchers.setdefault(key, Matcher(FRAUD))
                for event in buffer.release(max_ts - 10 * MINUTE_MS):
                    matcher.feed(event)
    return len(logins) / (time.perf_counter() - started)


def bench_stream(
    spark: Any, module: Any, bootstrap: str, work: Path, events: int
) -> dict[str, Any]:
    from riverbed.pipelines.examples import ExampleOptions

    options = ExampleOptions(bootstrap, work / f"chk-{module.__name__}", available_now=True)
    started = time.perf_counter()
    queries = module.start(spark, options)
    for query in queries:
        query.awaitTermination()
        assert query.exception() is None, query.exception()
    seconds = time.perf_counter() - started
    progress = [p for p in queries[0].recentProgress if p["numInputRows"] > 0][-1]
    state = progress["stateOperators"][0]
    return {
        "events_per_s": events / seconds,
        "seconds": seconds,
        "state_rows": state["numRowsTotal"],
        "state_memory_bytes": state["memoryUsedBytes"],
    }


def bench_batch(spark: Any, bootstrap: str, topic: str, events: int) -> float:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from riverbed.pipelines import fraud, sessions

    started = time.perf_counter()
    records = (
        spark.read.format("riverbed")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    if topic == "pageviews":
        result = sessions.sessionize(sessions.parse_pageviews(records))
    else:
        logins = fraud.parse_logins(records)
        w = Window.partitionBy("user_id").orderBy("ts", "ok")
        lagged = logins.select(
            "user_id",
            "ok",
            "ts",
            *[F.lag("ok", n).over(w).alias(f"ok{n}") for n in (1, 2, 3)],
            *[F.lag("ts", n).over(w).alias(f"ts{n}") for n in (1, 2, 3)],
        )
        result = lagged.filter(
            F.col("ok")
            & ~F.col("ok1")
            & ~F.col("ok2")
            & ~F.col("ok3")
            & (F.col("ts3") >= F.col("ts") - fraud.WITHIN_MS)
        )
    result.write.format("noop").mode("overwrite").save()
    return events / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    from riverbed.pipelines import fraud, sessions
    from riverbed.spark.session import local_session
    from riverbed.testing.embedded import EmbeddedBroker

    rng = random.Random(args.seed)
    views = generate(rng, args.users, args.events, "pageviews")
    logins = generate(rng, args.users, args.events, "logins")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print(f"pure matcher (fraud pattern + order buffer): {bench_matcher(logins):,.0f} events/s")
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(Path(tmp) / "broker") as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = ["pageviews", "sessions", "logins", "fraud-alerts"]
        for future in admin.create_topics([NewTopic(t, 2, 1) for t in topics]).values():
            future.result(60)
        produce(bootstrap, "pageviews", views)
        produce(bootstrap, "logins", logins)
        spark = local_session(
            "bench-time-patterns",
            config={
                "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql."
                "execution.streaming.state.RocksDBStateStoreProvider",
                "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
            },
        )
        bench_batch(spark, bootstrap, "logins", args.events)  # warm up the JVM and workers
        for name, module, topic in (
            ("sessions", sessions, "pageviews"),
            ("fraud", fraud, "logins"),
        ):
            stream = bench_stream(spark, module, bootstrap, Path(tmp), args.events)
            batch = bench_batch(spark, bootstrap, topic, args.events)
            print(
                f"{name}: stream {stream['events_per_s']:,.0f} events/s ({stream['seconds']:.1f} s,"
                f" state {stream['state_rows']} rows, {stream['state_memory_bytes']:,} B) |"
                f" batch native {batch:,.0f} events/s | ratio {stream['events_per_s'] / batch:.2f}"
            )
        spark.stop()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
