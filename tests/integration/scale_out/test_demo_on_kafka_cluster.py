"""``riverbed demo --bootstrap-server`` (and ``--master``) on a three-broker Kafka cluster,
with the broker leading ``pageviews-0`` SIGKILLed mid-run.

What must hold, as the outside checks of the contract see it: exit 0, the summary's
``produced N page views`` equals ``read N`` (idempotent acks=all producer: no loss, no
duplicate; the pipeline's source rides out the leader change), and the per-user-per-hour
table plus the stragglers equals the batch job over the input topic -- in plain Python in
the default suite's test (``cluster_smoke``: no second JVM start), and also as a Spark
batch job in the full form.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from riverbed.testing.kafka_cluster import KafkaCluster
from riverbed.testing.spark_standalone import SparkStandalone

from .cluster_checks import (
    demo_table_equals_batch,
    demo_table_equals_model,
    high_watermark,
    leader,
    number,
    wait_until,
)
from .conftest import FULL

pytestmark = pytest.mark.cluster
DEMO = [sys.executable, "-c", "from riverbed.cli.demo_command import demo_command; demo_command()"]


def _run_demo_killing_a_broker(
    cluster: KafkaCluster, data_dir: Path, extra: list[str], duration_s: int
) -> str:
    """Run the demo; kill ``pageviews-0``'s leader once page views flow; return stdout.

    The killed broker stays dead (the ``kafka_cluster`` fixture restarts it for the next
    test)."""
    data_dir.mkdir()
    out_path = data_dir.parent / f"{data_dir.name}.out"
    args = [*DEMO, "--bootstrap-server", cluster.bootstrap_servers, *extra]
    args += ["--users", "5", "--rate", "100", "--duration", str(duration_s)]
    args += ["--data-dir", str(data_dir)]
    with open(out_path, "w") as out, open(data_dir.parent / "stderr", "w") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    try:
        wait_until(
            lambda: proc.poll() is not None or "streaming  for" in out_path.read_text(),
            300,
            "the demo to start streaming",
        )
        assert proc.poll() is None, _why(out_path, data_dir)
        # Mid-run: page views in the cluster and the pipeline past its first micro-batch.
        wait_until(
            lambda: proc.poll() is not None or re.search(r" in [\d,]+ @", out_path.read_text()),
            300,
            "the pipeline's first micro-batch",
        )
        assert proc.poll() is None, _why(out_path, data_dir)
        assert high_watermark(cluster.bootstrap_servers, "pageviews") > 0
        cluster.kill(leader(cluster.bootstrap_servers, "pageviews", 0))
        proc.wait(timeout=duration_s + 400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    text = out_path.read_text()
    stderr = (data_dir.parent / "stderr").read_text()
    log = (
        (data_dir / "demo.log").read_text(errors="replace")
        if (data_dir / "demo.log").exists()
        else ""
    )
    assert proc.returncode == 0, f"{text}\n{stderr}\n{log[-4000:]}"
    assert stderr == "", stderr
    return text


def _why(out_path: Path, data_dir: Path) -> str:
    """The demo's stdout and stderr and the end of demo.log, for a failure message."""
    log = data_dir / "demo.log"
    tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
    return f"{out_path.read_text()}\n{(data_dir.parent / 'stderr').read_text()}\n{tail}"


def _check_summary(text: str) -> None:
    assert "external Kafka cluster, 3 brokers" in text, text
    assert "note:" not in text, text  # drained, every page view acknowledged
    produced = number(r"produced +([\d,]+) page views", text)
    assert produced >= 500
    assert number(r"read ([\d,]+) in", text) == produced


@pytest.mark.cluster_smoke
def test_demo_on_the_kafka_cluster_with_local_spark_survives_a_dead_broker(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    started = time.monotonic()
    duration_s = 40 if FULL else 10
    text = _run_demo_killing_a_broker(kafka_cluster, tmp_path / "demo", [], duration_s)
    _check_summary(text)
    assert "starting local[2]" in text
    demo_table_equals_model(kafka_cluster.bootstrap_servers, tmp_path / "demo")
    if FULL:  # the plain-Python batch job agrees with Spark's
        demo_table_equals_batch(kafka_cluster.bootstrap_servers, tmp_path / "demo")
    print(f"demo on the Kafka cluster: {time.monotonic() - started:.0f} s")


@pytest.mark.full_only
def test_demo_on_the_kafka_cluster_and_spark_standalone_survives_a_dead_broker(
    kafka_cluster: KafkaCluster, spark_cluster: SparkStandalone, tmp_path: Path
) -> None:
    # A fresh set of topics: the first test's page views stay in the cluster's topics.
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    topics = ["pageviews", "pageviews-per-user-hour", "pageviews-late"]
    for future in admin.delete_topics(topics, operation_timeout=30).values():
        with contextlib.suppress(Exception):  # not there (this test alone)
            future.result(60)
    wait_until(
        lambda: not set(topics) & set(admin.list_topics(timeout=10).topics),
        60,
        "the demo's topics to be deleted",
    )
    master = ["--master", spark_cluster.master_url]
    text = _run_demo_killing_a_broker(kafka_cluster, tmp_path / "demo", master, duration_s=60)
    _check_summary(text)
    assert f"starting {spark_cluster.master_url}" in text
    demo_table_equals_batch(kafka_cluster.bootstrap_servers, tmp_path / "demo")
