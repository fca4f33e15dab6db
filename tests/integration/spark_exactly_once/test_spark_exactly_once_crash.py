"""The exactly-once sink under a real SIGKILL of the Spark driver (or of an executor).

Each case runs ``eos_driver.py`` -- its own process group: driver, JVM, Python workers --
with one failure point armed (``RIVERBED_SPARK_FAILPOINT``, see
:mod:`riverbed.spark.transactional_failpoints`), checks that it died by SIGKILL, restarts
it from the same checkpoint without the point, and compares what a read_committed reader
sees in the output topic with the output of a clean run: every committed input record
exactly once, nothing from aborted or open input transactions.

Timeline of one micro-batch N (3 sink tasks on ``local[2]``: two run, then the third)::

    driver: offsets/N ─ tasks ─────────────────────────────── writer.commit ─ commits/N ─ progress
    task p:   init ─ marker read ─ begin ─ produce ─ flush ─ send_offsets ─ commit ─ return
              ^before_init  ^after_marker_read  ^mid_produce ^before_send_offsets
                                              ^before_commit       ^after_commit
    driver:   ^before_batch_commit  ^after_batch_commit (Spark's commit log not yet written)
              ^kill_after_batch (commit log written, progress reported)

The default suite runs two kill points in one query's life (:data:`DEFAULT_SEQUENCE`: the
driver killed between two tasks' commits of batch 1, restarted, killed again after every
task of batch 2 committed but before Spark's commit log, restarted to the end): three driver
runs, ~2 min on a quiet 2-core box (each Spark driver start costs ~30 s).  The full matrix
(each of those kill points alone, a clean run, 8 more driver kills, an executor kill and
the at-least-once control, which must show duplicates) is marked ``spark_crash``::

    .venv/bin/python -m pytest -q -p no:cacheprovider -m spark_crash \\
        tests/integration/spark_exactly_once/test_spark_exactly_once_crash.py

``-m "spark_crash and kafka"`` runs the Apache Kafka variants only.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    TransactionalInput,
    create_topic,
    expected_output,
    output_of,
    run_driver,
    transactional_input,
)

SHUFFLE_PARTITIONS = 3
MAX_OFFSETS_PER_TRIGGER = 40  # 288 input offsets (160 committed records) -> 8 micro-batches
pytestmark = pytest.mark.timeout(1200)  # two Spark drivers per case on a loaded box


@dataclass(frozen=True)
class Crash:
    """Where to crash: a sink failure point, or after Spark's commit log of a batch."""

    failpoint: str | None = None
    kill_after_batch: int | None = None
    executor_only: bool = False

    def __str__(self) -> str:
        return self.failpoint or f"after_commit_log:batch={self.kill_after_batch}"


DEFAULT_CASES = [
    # Between tasks: task 0 of batch 1 committed, the others not (or not all) yet.
    Crash("task.after_commit:batch=1:partition=0"),
    # Every task committed, Spark's commit log for batch 1 not written: batch 1 replays.
    Crash("driver.after_batch_commit:batch=1"),
]
DEFAULT_SEQUENCE = [
    DEFAULT_CASES[0],
    # The same kill point as DEFAULT_CASES[1], a batch later: the restarted driver replays
    # batch 1 (task 0's transaction of it already committed), then commits batch 2's tasks.
    Crash("driver.after_batch_commit:batch=2"),
]
FULL_MATRIX = [
    Crash("task.before_init:batch=1:partition=1"),
    Crash("task.after_marker_read:batch=1:partition=1"),
    Crash("task.mid_produce:batch=1:partition=1"),
    Crash("task.before_send_offsets:batch=1:partition=2"),
    Crash("task.before_commit:batch=1:partition=0"),
    Crash("task.after_commit:batch=0:partition=2"),
    Crash("task.after_commit:batch=2:partition=2"),
    Crash("driver.before_batch_commit:batch=2"),
    Crash(kill_after_batch=1),
    Crash("task.before_commit:batch=1:partition=1:kill=self", executor_only=True),
]


@pytest.fixture(scope="module")
def input_data(cluster: str) -> Iterator[TransactionalInput]:
    made = transactional_input(cluster)
    yield made
    made.close()


def _config(cluster: str, data: TransactionalInput, tmp_path: Path) -> dict[str, Any]:
    return {
        "bootstrap": cluster,
        "input": data.topic,
        "output": create_topic(cluster, 3),
        "checkpoint": str(tmp_path / "checkpoint"),
        "max_offsets": MAX_OFFSETS_PER_TRIGGER,
        "shuffle_partitions": SHUFFLE_PARTITIONS,
    }


def _crash_and_restart(
    cluster: str, data: TransactionalInput, tmp_path: Path, *crashes: Crash
) -> None:
    """Run the query once per crash, each from the checkpoint the last one left, then to its
    end; check what a read_committed reader sees in the output topic."""
    config = _config(cluster, data, tmp_path)
    for crash in crashes:
        crashed = run_driver(
            {**config, "kill_after_batch": crash.kill_after_batch}, failpoint=crash.failpoint
        )
        if crash.executor_only:
            # The worker died, the task failed, the query failed; the driver exited itself.
            assert crashed.returncode not in (0, -signal.SIGKILL), crashed.output[-3000:]
        else:
            assert crashed.returncode == -signal.SIGKILL, f"{crash}: {crashed.output[-3000:]}"
    restarted = run_driver(config)
    assert restarted.returncode == 0, restarted.output[-3000:]
    seen = output_of(cluster, config["output"])
    expected = expected_output(data)
    duplicates = {k: n for k, n in seen.items() if n > 1}
    label = " then ".join(map(str, crashes))
    assert not duplicates, f"{label}: duplicated rows {list(duplicates.items())[:5]}"
    assert seen == expected, (
        f"{label}: missing {list((expected - seen).items())[:5]}, "
        f"unexpected {list((seen - expected).items())[:5]}"
    )


@pytest.mark.spark_crash
def test_clean_run_writes_each_committed_input_record_once(
    cluster: str, input_data: TransactionalInput, tmp_path: Path
) -> None:
    config = _config(cluster, input_data, tmp_path)
    run = run_driver(config)
    assert run.returncode == 0, run.output[-3000:]
    assert output_of(cluster, config["output"]) == expected_output(input_data)
    assert len(input_data.committed) == 160


def test_driver_killed_twice_then_restarted_output_is_exactly_once(
    cluster: str, input_data: TransactionalInput, tmp_path: Path
) -> None:
    _crash_and_restart(cluster, input_data, tmp_path, *DEFAULT_SEQUENCE)


@pytest.mark.spark_crash
@pytest.mark.parametrize("crash", DEFAULT_CASES, ids=str)
def test_driver_killed_then_restarted_output_is_exactly_once(
    cluster: str, input_data: TransactionalInput, tmp_path: Path, crash: Crash
) -> None:
    _crash_and_restart(cluster, input_data, tmp_path, crash)


@pytest.mark.spark_crash
@pytest.mark.kafka
@pytest.mark.parametrize("crash", DEFAULT_CASES, ids=str)
def test_against_apache_kafka(kafka_cluster: str, tmp_path: Path, crash: Crash) -> None:
    """The same crash and check with Apache Kafka as the cluster (only confluent-kafka's
    transactional producer and group offsets are used, nothing Riverbed-specific)."""
    data = transactional_input(kafka_cluster)
    try:
        _crash_and_restart(kafka_cluster, data, tmp_path, crash)
    finally:
        data.close()


@pytest.mark.spark_crash
def test_at_least_once_duplicates_the_replayed_batch(
    cluster: str, input_data: TransactionalInput, tmp_path: Path
) -> None:
    """The control: the same crash with the at-least-once sink duplicates batch 1's rows,
    so the checks above would see a duplicate if exactly-once failed."""
    config = {**_config(cluster, input_data, tmp_path), "guarantee": "at_least_once"}
    crashed = run_driver(config, failpoint="driver.after_batch_commit:batch=1")
    assert crashed.returncode == -signal.SIGKILL, crashed.output[-3000:]
    assert run_driver(config).returncode == 0
    seen = output_of(cluster, config["output"])
    duplicated = sum(n - 1 for n in seen.values() if n > 1)
    assert 0 < duplicated <= MAX_OFFSETS_PER_TRIGGER
    assert set(seen) == set(expected_output(input_data))


@pytest.mark.spark_crash
@pytest.mark.parametrize("crash", FULL_MATRIX, ids=str)
def test_crash_matrix(
    cluster: str, input_data: TransactionalInput, tmp_path: Path, crash: Crash
) -> None:
    _crash_and_restart(cluster, input_data, tmp_path, crash)
