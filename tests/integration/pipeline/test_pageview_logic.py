"""The pipeline's pure parts: watermark rule, clickstream generator, store, formatting.

Timeline of the watermark rule (allowed delay 10 min, times in minutes)::

    batch 0: events 0..60        max 60   -> watermark for batch 1 = 50
    batch 1: event 55  (> 50)    counted  (out of order, within the delay)
             event 50  (<= 50)   late     (side output)
             event 120           max 120  -> watermark for batch 2 = 110
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from riverbed.demo.clickstream import ClickstreamGenerator, ClickstreamSpec, PageView
from riverbed.demo.progress import Progress, format_hourly_table, format_progress
from riverbed.spark.pageviews_store import (
    FACTS_SCHEMA,
    PageviewStore,
    WindowCount,
    is_late,
    next_watermark_ms,
)

MIN = 60_000


def test_watermark_follows_sparks_rule() -> None:
    assert next_watermark_ms(None, 10 * MIN) == 0
    watermark = next_watermark_ms(60 * MIN, 10 * MIN)
    assert watermark == 50 * MIN
    assert not is_late(55 * MIN, watermark)
    assert is_late(50 * MIN, watermark)  # Spark: eventTime <= watermark is late
    assert next_watermark_ms(120 * MIN, 10 * MIN) == 110 * MIN


@given(st.integers(0, 10_000), st.integers(1, 50))
def test_generator_is_deterministic(seed: int, count: int) -> None:
    spec = ClickstreamSpec(users=3, seed=seed)
    assert ClickstreamGenerator(spec).take(count) == ClickstreamGenerator(spec).take(count)


def test_generator_mixes_in_order_out_of_order_and_late_events() -> None:
    spec = ClickstreamSpec(users=5, seed=3, late_fraction=0.05, out_of_order_fraction=0.2)
    events = ClickstreamGenerator(spec).take(2_000)
    behind = [i for i, e in enumerate(events) if e.event_time_ms < spec.start_ms + i * spec.step_ms]
    late = [i for i, e in enumerate(events)
            if e.event_time_ms == spec.start_ms + i * spec.step_ms - spec.late_by_ms]
    assert 0.2 < len(behind) / len(events) < 0.3
    assert 0.03 < len(late) / len(events) < 0.07
    assert {e.user_id for e in events} == {f"user-00{i}" for i in range(5)}
    assert PageView.from_value(events[0].value()) == events[0]


def _facts(batch_id: int, rows: list[tuple[str, str | None, int | None, int | None, int]]
           ) -> pa.Table:
    columns = list(zip(*[(batch_id, *r) for r in rows], strict=True))
    return pa.table({f.name: pa.array(list(c), f.type) for f, c in
                     zip(FACTS_SCHEMA, columns, strict=True)}, schema=FACTS_SCHEMA)


def test_store_applies_each_batch_once_and_keeps_the_watermark(tmp_path: Path) -> None:
    store = PageviewStore(tmp_path / "a.sqlite")
    hour = 3_600_000
    first = _facts(0, [("tumbling", "u1", 0, hour, 3), ("progress", None, 0, 40 * MIN, 3)])
    assert store.write_batch("q", 0, first) is True
    assert store.write_batch("q", 0, first) is False  # a replay changes nothing
    second = _facts(1, [("tumbling", "u1", 0, hour, 2), ("late", "u2", 0, hour, 1),
                        ("progress", None, 30 * MIN, 70 * MIN, 3)])
    assert store.watermark_ms(10 * MIN, before_batch=1) == 30 * MIN
    assert store.write_batch("q", 1, second) is True
    assert store.counts("tumbling") == [WindowCount("u1", 0, hour, 5)]
    assert store.counts("late") == [WindowCount("u2", 0, hour, 1)]
    assert store.watermark_ms(10 * MIN) == 60 * MIN
    assert store.watermark_ms(10 * MIN, before_batch=1) == 30 * MIN
    assert store.totals_touched_by(0) == [("tumbling", WindowCount("u1", 0, hour, 3))]
    assert store.totals_touched_by(1) == [("tumbling", WindowCount("u1", 0, hour, 5))]
    assert store.committed_batches() == 2


def test_formatting() -> None:
    line = format_progress(Progress(3.0, 1200, 1000, 80, 4, 200, 2, 0.8, 1_704_067_200_000))
    assert "in 1,000" in line and "lag 200" in line and "watermark 00:00" in line
    hour = 3_600_000
    table = format_hourly_table(
        [WindowCount("u1", 0, hour, 5), WindowCount("u1", hour, 2 * hour, 7),
         WindowCount("u2", hour, 2 * hour, 1)],
        [WindowCount("u2", 0, hour, 2)],
    )
    lines = table.splitlines()
    assert lines[0].split() == ["user", "00:00", "01:00", "total", "late"]
    assert lines[2].split() == ["u1", "5", "7", "12", "0"]
    assert lines[3].split() == ["u2", "1", "1", "2"]
