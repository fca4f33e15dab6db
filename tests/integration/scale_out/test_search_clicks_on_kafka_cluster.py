"""``riverbed pipeline run search-clicks --bootstrap-server <cluster>``, unchanged but for the
address, with the broker leading ``searches-0`` SIGKILLed mid-run (full form only).

The input is the seeded differential input of tests/integration/pipelines_joins; the output
must equal the batch model of that suite (``joins_model.search_clicks``).
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from riverbed.testing.kafka_cluster import KafkaCluster

from .cluster_checks import leader, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.full_only]
RIVERBED = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]
T0 = 1_700_000_000_000


def test_search_clicks_on_the_kafka_cluster_survives_a_dead_broker(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    listed = subprocess.run([*RIVERBED, "pipeline", "list"], capture_output=True, text=True)
    if "search-clicks" not in listed.stdout:
        pytest.skip("the search-clicks example has not landed")
    from pipelines_joins.conftest import drain, produce  # type: ignore[import-not-found]
    from pipelines_joins.joins_model import (  # type: ignore[import-not-found]
        canonical,
        final_watermark,
        search_clicks,
        search_clicks_input,
    )

    from riverbed.cli.pipeline_command import input_topic_config
    from riverbed.pipelines.examples import ExampleOptions, example_module

    bs = kafka_cluster.bootstrap_servers
    checkpoint = tmp_path / "checkpoint"
    options = ExampleOptions(bs, checkpoint, available_now=True)
    module = example_module("search-clicks")
    configs = {t: input_topic_config(t, options) for t in module.INPUT_TOPICS(options)}
    configs |= module.OUTPUT_TOPICS(options)
    admin = AdminClient({"bootstrap.servers": bs})
    # Replicated topics (the cluster's default factor, 3) before the runner's ensure_topics.
    new = [NewTopic(t, 2, -1, config=dict(c or {})) for t, c in configs.items()]
    for future in admin.create_topics(new).values():
        future.result(60)
    searches, clicks, arrivals = search_clicks_input(random.Random(12), T0)
    for topic in ("searches", "clicks"):
        produce(bs, topic, [(str(v["search_id"]), v) for t, v in arrivals if t == topic])

    command = [*RIVERBED, "pipeline", "run", "search-clicks", "--bootstrap-server", bs]
    command += ["--checkpoint", str(checkpoint), "--available-now"]
    command += ["--source-option", "maxOffsetsPerTrigger=40"]
    log = tmp_path / "pipeline.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    killed = None
    try:
        wait_until(
            lambda: proc.poll() is not None or any(checkpoint.glob("**/commits/0")),
            400,
            "the first committed micro-batch",
            0.5,
        )
        if proc.poll() is None:
            killed = leader(bs, "searches", 0)
            kafka_cluster.kill(killed)
        proc.wait(600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        if killed is not None:
            kafka_cluster.restart(killed)
    assert proc.returncode == 0, log.read_text()[-5000:]
    assert killed is not None, "the run ended before a broker could be killed"
    expected = search_clicks(searches, clicks, final_watermark(searches, clicks))
    assert canonical(drain(bs, "search-clicks")) == canonical(expected)
