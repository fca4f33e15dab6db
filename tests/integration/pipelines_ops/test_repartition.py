"""repartition_through_topic against a broker process: stage one keys page views by user
into an intermediate topic (exactly-once), stage two aggregates per user; each user's
rows are in one partition and the counts equal the batch answer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from riverbed.pipelines.examples import ExampleOptions
from riverbed.pipelines.repartition import read_repartitioned, repartition_through_topic
from riverbed.pipelines.sessions import PAGEVIEW_JSON, parse_pageviews
from riverbed.pipelines.topic_streams import read_topics
from riverbed.testing.broker_process import BrokerProcess, free_port


@pytest.mark.slow
def test_two_stages(spark: SparkSession, tmp_path: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from riverbed.spark import register

    register(spark)

    broker = BrokerProcess(tmp_path / "b", free_port(), tmp_path / "b.log", {"num.partitions": "2"})
    broker.start(timeout_s=120)
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(t, 2, 1) for t in ("in", "by-user")]).values():
            f.result(60)
        views = [{"user_id": f"u{i % 7}", "url": f"/{i}", "ts": 1000 + i} for i in range(140)]
        producer = Producer({"bootstrap.servers": bootstrap})
        for i, v in enumerate(views):  # round robin: a user's views in both partitions
            producer.produce("in", value=json.dumps(v), partition=i % 2)
        assert producer.flush(60) == 0
        options = ExampleOptions(bootstrap, tmp_path / "chk", available_now=True)
        stage1 = repartition_through_topic(
            parse_pageviews(read_topics(spark, options, ["in"])).drop("event_time"),
            "user_id",
            "by-user",
            options,
            "stage1",
        )
        assert stage1.awaitTermination(300) and stage1.exception() is None
        got: list[Any] = []
        stage2 = (
            read_repartitioned(spark, options, "by-user", PAGEVIEW_JSON)
            .writeStream.foreachBatch(lambda df, _: got.extend(df.collect()))
            .option("checkpointLocation", str(tmp_path / "chk2"))
            .trigger(availableNow=True)
            .start()
        )
        assert stage2.awaitTermination(300) and stage2.exception() is None
        assert Counter(r.user_id for r in got) == Counter(v["user_id"] for v in views)
        partitions: dict[str, set[int]] = {}
        for r in got:
            partitions.setdefault(r.user_id, set()).add(r.partition)
        assert all(len(p) == 1 for p in partitions.values())
    finally:
        broker.close()
