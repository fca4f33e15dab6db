"""The page-view pipeline through real Spark against an embedded Riverbed broker.

* stream = batch: the windows the stream counted, plus the stragglers it diverted to the
  side-output topic (re-counted by the *batch* job), equal the batch job over the whole
  input topic -- nothing is lost, nothing counted twice;
* the output topic's latest total per window equals the analytics table;
* a driver killed with SIGKILL mid-run and restarted from its checkpoint leaves the same
  derived table as a clean run.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from riverbed.demo.clickstream import (
    ClickstreamGenerator,
    ClickstreamSpec,
    PageView,
    create_topics,
    produce_pageviews,
)
from riverbed.pipelines.pageviews import (
    REASON_HEADER,
    PageviewConfig,
    batch_window_counts,
    start_pageviews_query,
)
from riverbed.pipelines.pageviews_store import PageviewStore, WindowCount

from .topics import read_topic

EVENTS = 1_500
MAX_OFFSETS_PER_TRIGGER = 300  # 5 micro-batches, the same in every run
SPEC = ClickstreamSpec(
    users=6,
    seed=11,
    step_ms=20_000,
    late_fraction=0.04,
    out_of_order_fraction=0.25,
    jitter_ms=8 * 60_000,
)


@dataclass(frozen=True)
class Run:
    input_topic: str
    events: list[PageView]
    config: PageviewConfig
    late_records: int


def _config(bootstrap: str, input_topic: str, work: Path) -> PageviewConfig:
    suffix = uuid.uuid4().hex[:8]
    config = PageviewConfig(
        bootstrap_servers=bootstrap,
        database=work / "analytics.sqlite",
        checkpoint=work / "checkpoint",
        input_topic=input_topic,
        output_topic=f"pv-out-{suffix}",
        late_topic=f"pv-late-{suffix}",
        max_offsets_per_trigger=MAX_OFFSETS_PER_TRIGGER,
    )
    create_topics({"bootstrap.servers": bootstrap}, [config.output_topic, config.late_topic], 2)
    return config


@pytest.fixture(scope="module")
def clean_run(spark: SparkSession, bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    input_topic = f"pv-in-{uuid.uuid4().hex[:8]}"
    create_topics({"bootstrap.servers": bootstrap}, [input_topic], 2)
    events = ClickstreamGenerator(SPEC).take(EVENTS)
    produce_pageviews({"bootstrap.servers": bootstrap}, input_topic, events)
    config = _config(bootstrap, input_topic, tmp_path_factory.mktemp("clean"))
    query, writer = start_pageviews_query(spark, config, available_now=True)
    assert query.awaitTermination(300)
    assert query.exception() is None
    assert writer.rows_in == EVENTS
    return Run(input_topic, events, config, writer.late)


def _as_dict(rows: list[WindowCount]) -> dict[tuple[str, int, int], int]:
    return {(r.user_id, r.window_start_ms, r.window_end_ms): r.count for r in rows}


def _batch_counts(
    spark: SparkSession, config: PageviewConfig, topic: str
) -> dict[str, collections.Counter[tuple[str, int, int]]]:
    out: dict[str, collections.Counter[tuple[str, int, int]]] = {
        "tumbling": collections.Counter(),
        "hopping": collections.Counter(),
    }
    for row in batch_window_counts(spark, config, topic).collect():
        out[row["fact"]][(row["user_id"], row["window_start_ms"], row["window_end_ms"])] += row[
            "count"
        ]
    return out


def test_stream_plus_stragglers_equals_the_batch_job(spark: SparkSession, clean_run: Run) -> None:
    config = clean_run.config
    store = PageviewStore(config.database)
    whole = _batch_counts(spark, config, clean_run.input_topic)
    stragglers = _batch_counts(spark, config, config.late_topic)
    for kind in ("tumbling", "hopping"):
        streamed = collections.Counter(_as_dict(store.counts(kind)))  # type: ignore[arg-type]
        assert streamed + stragglers[kind] == whole[kind], kind
    # Every input row is in exactly one place: the table or the side output.
    late = read_topic(config.bootstrap_servers, config.late_topic)
    assert 0 < len(late) == clean_run.late_records == store.fact_total("late")
    assert sum(r.count for r in store.counts("tumbling")) + len(late) == EVENTS
    assert sum(r.count for r in store.counts("hopping")) == 4 * (EVENTS - len(late))
    assert {r.headers[REASON_HEADER] for r in late} == {b"late"}


def test_out_of_order_rows_within_the_delay_are_counted(clean_run: Run) -> None:
    """Replaying the watermark rule batch by batch in plain Python gives the same split."""
    store = PageviewStore(clean_run.config.database)
    progress = store.progress()
    assert [p.batch_id for p in progress] == list(range(EVENTS // MAX_OFFSETS_PER_TRIGGER))
    watermarks = [p.watermark_ms for p in progress]
    assert watermarks == sorted(watermarks) and watermarks[0] == 0
    late = read_topic(clean_run.config.bootstrap_servers, clean_run.config.late_topic)
    late_events = {PageView.from_value(r.value or b"") for r in late}
    assert all(e.event_time_ms <= watermarks[-1] for e in late_events)
    out_of_order_counted, max_seen = 0, 0
    for event in clean_run.events:
        if event.event_time_ms < max_seen and event not in late_events:
            out_of_order_counted += 1
        max_seen = max(max_seen, event.event_time_ms)
    assert out_of_order_counted > 50  # out of order, yet within the allowed delay


def test_output_topic_holds_the_table_as_upserts(clean_run: Run) -> None:
    config = clean_run.config
    store = PageviewStore(config.database)
    latest: dict[tuple[str, str, int, int], int] = {}
    for record in read_topic(config.bootstrap_servers, config.output_topic):
        data = json.loads(record.value or b"")
        assert record.key == data["user_id"].encode()
        latest[(data["window"], data["user_id"], data["window_start"], data["window_end"])] = data[
            "count"
        ]
    table = {("tumbling", *k): v for k, v in _as_dict(store.counts("tumbling")).items()}
    table |= {("hopping", *k): v for k, v in _as_dict(store.counts("hopping")).items()}
    assert latest == table


def _driver(config: PageviewConfig, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "riverbed.pipelines.pageviews",
            "--bootstrap-servers",
            config.bootstrap_servers,
            "--database",
            str(config.database),
            "--checkpoint",
            str(config.checkpoint),
            "--input-topic",
            config.input_topic,
            "--output-topic",
            config.output_topic,
            "--late-topic",
            config.late_topic,
            "--allowed-delay-ms",
            str(config.allowed_delay_ms),
            "--max-offsets-per-trigger",
            str(MAX_OFFSETS_PER_TRIGGER),
        ],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_driver_killed_mid_run_resumes_from_its_checkpoint(
    clean_run: Run, bootstrap: str, tmp_path: Path
) -> None:
    config = _config(bootstrap, clean_run.input_topic, tmp_path)
    store = PageviewStore(config.database)
    log = tmp_path / "driver.log"
    driver = _driver(config, log)
    try:
        deadline = time.monotonic() + 180
        while store.committed_batches() < 2:
            assert driver.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and its JVM, mid-run
        driver.wait(30)
    assert 2 <= store.committed_batches() < EVENTS // MAX_OFFSETS_PER_TRIGGER
    restarted = _driver(config, log)
    assert restarted.wait(240) == 0, log.read_text()
    clean = PageviewStore(clean_run.config.database)
    for kind in ("tumbling", "hopping", "late"):
        assert store.counts(kind) == clean.counts(kind), kind  # type: ignore[arg-type]
    assert [(p.watermark_ms, p.max_event_time_ms, p.rows) for p in store.progress()] == [
        (p.watermark_ms, p.max_event_time_ms, p.rows) for p in clean.progress()
    ]
