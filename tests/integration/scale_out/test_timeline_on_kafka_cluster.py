"""``riverbed pipeline run timeline --available-now`` on the three-broker Kafka cluster and
the Spark standalone cluster (full form), unchanged but for ``--bootstrap-server`` and
``--master``, with the broker leading ``riverbed.main.tweets-0`` SIGKILLed once the first
micro-batch is committed (``maxOffsetsPerTrigger=60``: several micro-batches).

Input: a seeded history of the tweets and follows tables (Debezium envelopes, as ``riverbed
cdc`` writes them: creates, text updates, deletes with their tombstones, follows and
unfollows).  The output topic folded by key, as a compacted topic's reader sees it, must
equal the batch model of tests/integration/pipelines_joins (``joins_model.timeline_view``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from riverbed.testing.kafka_cluster import KafkaCluster
from riverbed.testing.spark_standalone import SparkStandalone

from .cluster_checks import PipelineRun, leader, produce_json, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.full_only]
TWEETS, FOLLOWS = "riverbed.main.tweets", "riverbed.main.follows"
T0 = 1_700_000_000_000


def _history(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from pipelines_joins.joins_model import envelope  # type: ignore[import-not-found]

    tweets: list[dict[str, Any]] = []
    follows: list[dict[str, Any]] = []
    live: dict[int, int] = {}
    edges: set[tuple[int, int]] = set()
    for step in range(300):
        ts = T0 + step * 1000
        if rng.random() < 0.55:
            if live and rng.random() < 0.3:
                tid = rng.choice(sorted(live))
                if rng.random() < 0.5:
                    row = {"id": tid, "user_id": live.pop(tid), "text": "gone", "ts": ts}
                    tweets.append(envelope("d", row, None, ts, "tweets"))
                else:
                    row = {"id": tid, "user_id": live[tid], "text": f"edit {step}", "ts": ts}
                    tweets.append(envelope("u", row, row, ts, "tweets"))
            else:
                tid, author = 1000 + step, rng.randrange(1, 8)
                live[tid] = author
                row = {"id": tid, "user_id": author, "text": f"t{step}", "ts": ts}
                tweets.append(envelope("c", None, row, ts, "tweets"))
        else:
            pair = (rng.randrange(100, 110), rng.randrange(1, 8))
            row = {"follower": pair[0], "followee": pair[1]}
            if pair in edges:
                edges.discard(pair)
                follows.append(envelope("d", row, None, T0, "follows"))
            else:
                edges.add(pair)
                follows.append(envelope("c", None, row, T0, "follows"))
    return tweets, follows


def _records(changes: list[dict[str, Any]], key_columns: tuple[str, ...]) -> list[Any]:
    """Topic records of ``changes`` as ``riverbed cdc`` writes them (a tombstone after a
    delete)."""
    out: list[Any] = []
    for change in changes:
        image = change["before"] if change["op"] == "d" else change["after"]
        key = {k: image[k] for k in key_columns}
        out.append((key, change))
        if change["op"] == "d":
            out.append((key, None))
    return out


def test_timeline_on_the_kafka_cluster_and_spark_standalone_survives_a_dead_broker(
    kafka_cluster: KafkaCluster, spark_cluster: SparkStandalone, tmp_path: Path
) -> None:
    from pipelines_joins.conftest import drain  # type: ignore[import-not-found]
    from pipelines_joins.joins_model import (  # type: ignore[import-not-found]
        fold_compacted,
        timeline_view,
    )

    bs = kafka_cluster.bootstrap_servers
    tweets, follows = _history(random.Random(1919))
    checkpoint = tmp_path / "checkpoint"
    command = ["timeline", "--bootstrap-server", bs, "--checkpoint", str(checkpoint)]
    command += ["--master", spark_cluster.master_url, "--replication-factor", "3"]
    command += ["--available-now", "--source-option", "maxOffsetsPerTrigger=60"]
    # The CDC topics exist before the run (riverbed cdc creates them; the runner would too).
    from riverbed.cli.pipeline_command import ensure_topics

    compacted = {"cleanup.policy": "compact"}
    ensure_topics(bs, {TWEETS: compacted, FOLLOWS: compacted}, replication_factor=3)
    produce_json(bs, TWEETS, _records(tweets, ("id",)))
    produce_json(bs, FOLLOWS, _records(follows, ("follower", "followee")))

    run = PipelineRun(command, tmp_path / "pipeline.log")
    killed = False
    try:
        wait_until(
            lambda: not run.running() or any(checkpoint.glob("**/commits/0")),
            600,
            "the first committed micro-batch",
            0.5,
        )
        if run.running():
            kafka_cluster.kill(leader(bs, TWEETS, 0))
            killed = True
        code = run.wait(600)
    finally:
        run.kill()
    assert code == 0, run.tail()
    assert killed, "the run ended before a broker could be killed"
    assert f"running on {spark_cluster.master_url}" in run.log.read_text()
    view = fold_compacted(drain(bs, "timelines"))
    assert view == timeline_view(tweets, follows)
    assert len(view) > 30
