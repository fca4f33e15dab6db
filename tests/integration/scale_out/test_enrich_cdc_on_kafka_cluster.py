"""The CDC pipeline on the cluster (full form): ``riverbed cdc sqlite`` captures a ``users``
table into the three-broker Kafka cluster, then ``riverbed pipeline run enrich`` -- unchanged
but for ``--bootstrap-server`` and ``--master`` -- joins an activity stream with that table
as of each activity's event time on the Spark standalone cluster, running until SIGTERM;
the broker leading ``activity-0`` is SIGKILLed between the two halves of the activities.

The output must equal the batch model of tests/integration/pipelines_joins
(``joins_model.enrich`` over every activity and every captured change): in running mode
an activity is emitted once the watermark (max activity ``ts`` - 10 min) passes it, by
which time every change was read (all were captured before the first activity).  The
activities' times are placed around the captured ``source.ts_ms`` values (before the
first version, at a change exactly, between changes, after a delete), then an hour
later; a last activity two hours on moves the watermark past all of them (it is not
emitted itself).
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from riverbed.testing.kafka_cluster import KafkaCluster
from riverbed.testing.spark_standalone import SparkStandalone

from .cluster_checks import (
    RIVERBED,
    PipelineRun,
    leader,
    produce_json,
    read_topic,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.full_only]
USERS = "riverbed.main.users"
MIN = 60_000


def _capture(db: Path, bootstrap: str, log: Path) -> list[dict[str, Any]]:
    """Run ``riverbed cdc sqlite`` over a users table while it changes; the captured
    envelopes in topic order (per id), tombstones left out."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
    conn.execute("INSERT INTO users VALUES (1, 'ann', 'uk'), (2, 'bob', NULL), (3, 'cy', 'fr')")
    with open(log, "w") as out:
        connector = subprocess.Popen(
            [*RIVERBED, "cdc", "sqlite", "--db", str(db), "--bootstrap-server", bootstrap],
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})

        def users() -> list[bytes | None]:
            topic = admin.list_topics(timeout=10).topics.get(USERS)
            if topic is None or topic.error is not None or not topic.partitions:
                return []
            return read_topic(bootstrap, USERS)

        wait_until(lambda: len(users()) >= 3, 180, "the snapshot of users", 1)
        statements = [
            "UPDATE users SET country = 'fr' WHERE id = 1",
            "INSERT INTO users VALUES (4, 'dee', 'nz')",
            "UPDATE users SET name = 'bobby', country = 'de' WHERE id = 2",
            "DELETE FROM users WHERE id = 3",
            "UPDATE users SET name = 'ann2' WHERE id = 1",
            "INSERT INTO users VALUES (3, 'cy2', 'us')",
            "DELETE FROM users WHERE id = 4",
        ]
        for statement in statements:
            conn.execute(statement)
        # 3 snapshot rows + 7 changes + 2 tombstones after the deletes
        wait_until(lambda: len(users()) >= 12, 180, "every change captured", 1)
        connector.terminate()
        assert connector.wait(60) == 0, log.read_text()
    finally:
        if connector.poll() is None:
            connector.kill()
            connector.wait(30)
        conn.close()
    changes = [json.loads(v) for v in read_topic(bootstrap, USERS) if v is not None]
    assert sorted(c["op"] for c in changes) == sorted("rrr" + "ucudcud"), changes
    return changes


def _activities(changes: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """Activities of users 1-5 around every change's time (5: never existed)."""
    times = sorted({c["source"]["ts_ms"] for c in changes})
    first, last = times[0], times[-1]
    stamps = {first - MIN, last + 1}
    for t in times:
        stamps |= {t - 1, t, t + 1}
    out = []
    for ts in sorted(stamps):
        for uid in range(1, 6):
            if rng.random() < 0.6:
                action = rng.choice(["view", "buy"])
                out.append(
                    {"user_id": uid if rng.random() < 0.8 else str(uid), "action": action, "ts": ts}
                )
    # An hour later, each user at their final version, within 8 minutes of each other: read
    # in any order, none is behind the watermark (max ts - 10 min) the others moved.
    for ts in sorted(last + 60 * MIN + rng.randrange(8 * MIN) for _ in range(60)):
        out.append({"user_id": rng.randrange(1, 6), "action": "view", "ts": ts})
    return out


def test_cdc_into_the_cluster_then_enrich_on_spark_standalone_survives_a_dead_broker(
    kafka_cluster: KafkaCluster, spark_cluster: SparkStandalone, tmp_path: Path
) -> None:
    from pipelines_joins.conftest import drain  # type: ignore[import-not-found]
    from pipelines_joins.joins_model import (  # type: ignore[import-not-found]
        canonical,
    )
    from pipelines_joins.joins_model import (  # type: ignore[import-not-found]
        enrich as enrich_model,
    )

    bs = kafka_cluster.bootstrap_servers
    changes = _capture(tmp_path / "app.db", bs, tmp_path / "connector.log")
    activities = _activities(changes, random.Random(19))
    recent = [a for a in activities if a["ts"] <= max(c["source"]["ts_ms"] for c in changes) + 1]
    later = activities[len(recent) :]
    assert recent and later and recent + later == activities
    flush = {"user_id": 1, "action": "view", "ts": max(a["ts"] for a in later) + 120 * MIN}

    command = ["enrich", "--bootstrap-server", bs, "--checkpoint", str(tmp_path / "checkpoint")]
    command += ["--master", spark_cluster.master_url, "--replication-factor", "3"]
    run = PipelineRun(command, tmp_path / "pipeline.log")
    try:
        wait_until(
            lambda: not run.running() or "queries running" in run.log.read_text(),
            400,
            "the enrich query to start",
            0.5,
        )
        assert run.running(), run.tail()
        assert f"running on {spark_cluster.master_url}" in run.log.read_text()

        def key(a: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            return (str(a["user_id"]), a)

        # The first half, then (once acknowledged: never read after them, or they would be
        # behind the watermark) a quarter of the later ones, which move the watermark
        # past the first half.
        produce_json(bs, "activity", [key(a) for a in recent])
        produce_json(bs, "activity", [key(a) for a in later[:15]])
        wait_until(
            lambda: not run.running() or len(read_topic(bs, "activity-enriched")) >= len(recent),
            400,
            "the first half enriched",
            2,
        )
        assert run.running(), run.tail()
        kafka_cluster.kill(leader(bs, "activity", 0))
        produce_json(bs, "activity", [key(a) for a in later[15:]])
        produce_json(bs, "activity", [key(flush)])
        wait_until(
            lambda: (
                not run.running() or len(read_topic(bs, "activity-enriched")) >= len(activities)
            ),
            600,
            "every activity enriched",
            2,
        )
        assert run.running(), run.tail()
        assert run.terminate() == 0, run.tail()
    finally:
        run.kill()
    expected = enrich_model(activities, changes)
    actual = drain(bs, "activity-enriched")
    assert canonical(actual) == canonical(expected)
    assert sum(v["name"] is not None for _, v in actual) > len(activities) // 2
