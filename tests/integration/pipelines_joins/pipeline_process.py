"""``riverbed pipeline`` as a child process, the way a user runs it, for the CLI and
driver-kill tests: a plain environment (no PYSPARK_*), one process group per run (the
driver, its JVM and Python workers: a SIGKILL of the group is a driver crash), and reads
of the query's checkpoint (which micro-batches are planned and committed).

Checkpoint layout (Spark's): ``<checkpoint>/<query>/offsets/<N>`` is written when batch N
is planned, ``commits/<N>`` once its output is committed; a batch whose offsets exist
without a commit is in flight and is replayed, same offsets, by the next run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from riverbed.testing.broker_process import wait_until

CLI = [sys.executable, "-c", "from riverbed.cli.main import main; main()", "pipeline"]


def plain_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.pop("SPARK_LOCAL_IP", None)
    return env


def cli(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    """``riverbed pipeline ARGS`` to completion."""
    return subprocess.run(
        [*CLI, *args], env=plain_env(), capture_output=True, text=True, timeout=timeout_s
    )


class PipelineRun:
    """A running ``riverbed pipeline run ARGS`` (no ``--available-now``), output in
    ``log``."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._log_file = log.open("w")
        self.proc = subprocess.Popen(
            [*CLI, "run", *args],
            env=plain_env(),
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def still_running(self, pause_s: float = 1.0) -> None:
        """Between polls: fail at once if the pipeline died; otherwise wait ``pause_s``."""
        if self.proc.poll() is not None:
            tail = self.log.read_text()[-3000:]
            raise AssertionError(f"pipeline exited with {self.proc.returncode}:\n{tail}")
        time.sleep(pause_s)

    def terminate(self, timeout_s: float = 180) -> int:
        """SIGTERM (a clean stop) and the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout_s)

    def kill(self) -> None:
        """SIGKILL the whole group (the driver, its JVM and Python workers), if alive."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        self.kill()
        self._log_file.close()


@contextmanager
def pipeline_run(args: list[str], log: Path) -> Iterator[PipelineRun]:
    """A :class:`PipelineRun`, SIGKILLed on the way out if it still runs."""
    run = PipelineRun(args, log)
    try:
        yield run
    finally:
        run.close()


def _batch_ids(directory: Path) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def committed_batches(query_checkpoint: Path) -> list[int]:
    """The ids of the micro-batches whose commit is logged."""
    return _batch_ids(query_checkpoint / "commits")


def batch_in_flight(query_checkpoint: Path) -> int | None:
    """The id of the planned batch not committed yet (offsets logged, no commit), if any."""
    planned, committed = (
        _batch_ids(query_checkpoint / "offsets"),
        committed_batches(query_checkpoint),
    )
    if planned and (not committed or planned[-1] > committed[-1]):
        return planned[-1]
    return None


def planned_offsets(query_checkpoint: Path, batch: int) -> dict[str, dict[int, int]]:
    """The end offsets batch ``batch`` reads, per topic and partition (every source of the
    query merged; Spark's offset log: a version line, the batch metadata, then one JSON
    line per source)."""
    lines = (query_checkpoint / "offsets" / str(batch)).read_text().splitlines()
    ends: dict[str, dict[int, int]] = {}
    for line in lines[2:]:
        if line.strip().startswith("{"):
            for topic, partitions in json.loads(line).items():
                ends.setdefault(topic, {}).update({int(p): o for p, o in partitions.items()})
    return ends


def end_offsets(bootstrap: str, topics: list[str]) -> dict[str, dict[int, int]]:
    """The high watermarks of ``topics`` per partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "end-offsets"})
    try:
        metadata = consumer.list_topics(timeout=60).topics
        return {
            topic: {
                p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=60)[1]
                for p in metadata[topic].partitions
            }
            for topic in topics
        }
    finally:
        consumer.close()


def kill_mid_batch(
    run: PipelineRun, query_checkpoint: Path, bootstrap: str, topics: list[str]
) -> int:
    """SIGKILL ``run`` while a micro-batch is in flight (planned, not committed) and the
    input ``topics`` hold records beyond that batch's end offsets; that batch's id.

    The batch may commit between the last poll and the kill (then the run died between
    two batches, input still pending), which the restart must handle the same way.
    """
    seen: list[int] = []

    def in_flight_with_input_pending() -> bool:
        batch = batch_in_flight(query_checkpoint)
        if batch is None:
            return False
        try:
            planned = planned_offsets(query_checkpoint, batch)
        except FileNotFoundError:
            return False
        ends = end_offsets(bootstrap, topics)
        if any(
            planned.get(topic, {}).get(p, 0) < end
            for topic, partitions in ends.items()
            for p, end in partitions.items()
        ):
            seen.append(batch)
            return True
        return False

    wait_until(
        in_flight_with_input_pending,
        300,
        "a micro-batch in flight with input pending",
        lambda: run.still_running(0.05),
    )
    run.kill()
    return seen[-1]


def caught_up(query_checkpoint: Path, bootstrap: str, topics: list[str]) -> bool:
    """Whether a committed micro-batch has read ``topics`` up to their ends."""
    committed = committed_batches(query_checkpoint)
    if not committed:
        return False
    planned = planned_offsets(query_checkpoint, committed[-1])
    return all(
        planned.get(topic, {}).get(p, 0) >= end
        for topic, partitions in end_offsets(bootstrap, topics).items()
        for p, end in partitions.items()
    )
