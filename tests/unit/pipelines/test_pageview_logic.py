"""The pipeline's pure parts: watermark rule, clickstream generator, store, demo display.

Timeline of the watermark rule (allowed delay 10 min, times in minutes)::

    batch 0: events 0..60        max 60   -> watermark for batch 1 = 50
    batch 1: event 55  (> 50)    counted  (out of order, within the delay)
             event 50  (<= 50)   late     (side output)
             event 120           max 120  -> watermark for batch 2 = 110
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from riverbed.demo.clickstream import ClickstreamGenerator, ClickstreamSpec, PageView
from riverbed.demo.logs import FAILURE_MARK, tail
from riverbed.demo.progress import (
    Progress,
    ProgressDisplay,
    RateMeter,
    Summary,
    compact,
    duration,
    fit,
    format_progress,
    format_summary,
)
from riverbed.demo.table import format_user_hours, sqlite_hint, user_hours
from riverbed.pipelines.pageviews_store import (
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
    late = [
        i
        for i, e in enumerate(events)
        if e.event_time_ms == spec.start_ms + i * spec.step_ms - spec.late_by_ms
    ]
    assert 0.2 < len(behind) / len(events) < 0.3
    assert 0.03 < len(late) / len(events) < 0.07
    assert {e.user_id for e in events} == {f"user-00{i}" for i in range(5)}
    assert PageView.from_value(events[0].value()) == events[0]


def _facts(
    batch_id: int, rows: list[tuple[str, str | None, int | None, int | None, int]]
) -> pa.Table:
    columns = list(zip(*[(batch_id, *r) for r in rows], strict=True))
    return pa.table(
        {f.name: pa.array(list(c), f.type) for f, c in zip(FACTS_SCHEMA, columns, strict=True)},
        schema=FACTS_SCHEMA,
    )


def test_store_applies_each_batch_once_and_keeps_the_watermark(tmp_path: Path) -> None:
    store = PageviewStore(tmp_path / "a.sqlite")
    hour = 3_600_000
    first = _facts(0, [("tumbling", "u1", 0, hour, 3), ("progress", None, 0, 40 * MIN, 3)])
    assert store.write_batch("q", 0, first) is True
    assert store.write_batch("q", 0, first) is False  # a replay changes nothing
    second = _facts(
        1,
        [
            ("tumbling", "u1", 0, hour, 2),
            ("late", "u2", 0, hour, 1),
            ("progress", None, 30 * MIN, 70 * MIN, 3),
        ],
    )
    assert store.watermark_ms(10 * MIN, before_batch=1) == 30 * MIN
    assert store.write_batch("q", 1, second) is True
    assert store.counts("tumbling") == [WindowCount("u1", 0, hour, 5)]
    assert store.counts("late") == [WindowCount("u2", 0, hour, 1)]
    assert store.watermark_ms(10 * MIN) == 60 * MIN
    assert store.watermark_ms(10 * MIN, before_batch=1) == 30 * MIN
    assert store.totals_touched_by(0) == [("tumbling", WindowCount("u1", 0, hour, 3))]
    assert store.totals_touched_by(1) == [("tumbling", WindowCount("u1", 0, hour, 5))]
    assert store.committed_batches() == 2


def test_progress_line_fits_80_columns() -> None:
    waiting = format_progress(Progress(3.0, 1_200, 0, 0, 0, 1_200, 0, None, None))
    assert "waiting for the first micro-batch" in waiting and "lag 1,200" in waiting
    line = format_progress(
        Progress(
            312.0,
            999_999,
            987_654,
            123_456,
            4_321,
            98_765,
            150,
            12.3,
            1_704_067_200_000,
            in_rate=9_876.0,
            out_rate=1_234.0,
        )
    )
    assert line.split() == [
        "312s",
        "in",
        "988k",
        "@9,876/s",
        "out",
        "123k",
        "@1,234/s",
        "lag",
        "98.8k",
        "batch",
        "12.3s",
        "late",
        "4,321",
    ]
    assert len(line) < 80
    assert [compact(n) for n in (999, 12_345, 999_499, 999_500, 12_345_678)] == [
        "999",
        "12.3k",
        "999k",
        "1.0M",
        "12.3M",
    ]
    assert fit("x" * 100, 80) == "x" * 78 + "~" and fit("short", 80) == "short"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_display_redraws_on_a_terminal_and_prints_lines_otherwise() -> None:
    snapshots = [Progress(t, 100 * int(t), 0, 0, 0, 0, 0, None, None) for t in (0.2, 0.7, 1.1)]
    terminal, pipe = _Terminal(), io.StringIO()
    for display_out in (terminal, pipe):
        display = ProgressDisplay(display_out)
        for p in snapshots:
            display.show(p)
        display.show(snapshots[2], force=True)  # the final line, whatever the second
        display.end_line()
        display.end_line()  # idempotent
    assert terminal.getvalue().count("\r") == 4 and terminal.getvalue().count("\n") == 1
    assert terminal.getvalue().endswith("\x1b[K\n")
    assert pipe.getvalue().splitlines() == [
        format_progress(snapshots[0]),  # one a second
        format_progress(snapshots[2]),
    ] * 1 + [format_progress(snapshots[2])]


def test_rate_meter_reads_the_recent_rate() -> None:
    meter = RateMeter(window_s=10)
    assert meter.add(0.0, 0) == 0.0
    for second in range(1, 31):  # 100 rows/s, landing in batches every 3 s
        rate = meter.add(float(second), (second - second % 3) * 100)
    assert 80 <= rate <= 120
    assert meter.add(31.0, 3_000) < rate  # no rows for a while: the rate decays


def test_summary_says_what_happened() -> None:
    text = format_summary(
        Summary(
            produced=4_000,
            in_order=3_160,
            out_of_order=800,
            late_generated=40,
            jitter_ms=5 * MIN,
            late_by_ms=120 * MIN,
            records_in=4_000,
            records_out=900,
            stragglers=34,
            malformed=0,
            batches=6,
            last_batch_s=1.8,
            watermark_ms=1_704_067_200_000 + 191 * MIN,
            allowed_delay_ms=10 * MIN,
            first_event_ms=1_704_067_200_000,
            last_event_ms=1_704_067_200_000 + 201 * MIN,
            streaming_s=20.0,
            startup_s=8.0,
            wall_s=31.0,
        )
    )
    assert "4,000 page views in 20 s (200/s), event time 00:00-03:21 UTC" in text
    assert "800 out of order (up to 5 min), 40 late (2 h)" in text
    assert "3,966 on time (counted), 34 stragglers" in text
    assert "6 micro-batches (last took 1.8 s)" in text
    assert "03:11 UTC (max event time seen - 10 min allowed delay)" in text
    assert all(len(line) < 80 for line in text.splitlines())
    assert duration(90_000) == "90 s"


def test_user_hour_table_shows_tumbling_and_hopping_counts() -> None:
    # hour 0 of u1:  [0-----------60)            tumbling 5
    #   hopping      [0-60) 5  [15-75) 6  [30-90) 7  [45-105) 8
    hour = 60 * MIN
    tumbling = [
        WindowCount("u1", 0, hour, 5),
        WindowCount("u1", hour, 2 * hour, 7),
        WindowCount("u2", hour, 2 * hour, 20),
    ]
    hopping = [WindowCount("u1", k * 15 * MIN, k * 15 * MIN + hour, 5 + k) for k in range(4)]
    late = [WindowCount("u3", 0, hour, 2), WindowCount("u1", hour, 2 * hour, 1)]
    rows = user_hours(tumbling, hopping, late)
    assert [(r.user_id, r.hour_start_ms) for r in rows] == [
        ("u2", hour),
        ("u1", 0),
        ("u1", hour),
        ("u3", 0),
    ]  # busiest user first
    assert rows[1].hopping == (5, 6, 7, 8) and rows[1].tumbling == 5
    assert rows[3].tumbling == 0 and rows[3].late == 2
    lines = format_user_hours(rows, top=3).splitlines()
    assert "hopping 1 h windows" in lines[0]
    assert lines[1].split() == [
        "user",
        "hour",
        "(UTC)",
        "tumbling",
        "+00",
        "+15",
        "+30",
        "+45",
        "late",
    ]
    assert lines[4].split() == ["u1", "1970-01-01", "00:00", "5", "5", "6", "7", "8", "0"]
    assert lines[-1] == "... 1 more rows (of 4)"
    assert format_user_hours([]) == "(no page views counted)"
    assert "'unixepoch'" in sqlite_hint(Path("/tmp/a b/x.sqlite"))
    assert "'/tmp/a b/x.sqlite'" in sqlite_hint(Path("/tmp/a b/x.sqlite"))


@given(st.integers(0, 300), st.integers(1, 50))
def test_skipping_resumes_the_same_stream(skipped: int, count: int) -> None:
    spec = ClickstreamSpec(users=4, seed=5, late_fraction=0.1)
    resumed = ClickstreamGenerator(spec)
    resumed.skip(skipped)
    assert resumed.take(count) == ClickstreamGenerator(spec).take(skipped + count)[skipped:]
    assert resumed.in_order + resumed.out_of_order + resumed.late == count


def test_log_tail_stops_before_the_failure_record(tmp_path: Path) -> None:
    log = tmp_path / "demo.log"
    log.write_text(
        "one\n\ncause: java not found\n10:00 ERROR riverbed.demo: "
        f"{FAILURE_MARK}\nTraceback (most recent call last):\n  boom\n"
    )
    assert tail(log, lines=5) == ["one", "cause: java not found"]
    assert tail(log, lines=1, until=None) == ["  boom"]
    assert tail(tmp_path / "missing.log") == []
