"""What ``riverbed demo`` prints while it runs and when it ends: progress line and summary.

Formatting of plain values (no pyspark), tested directly; :class:`ProgressDisplay` is the
only part that writes, to the stream it is given.

The progress line fits an 80-column terminal (large counts shortened: ``98.8k``,
``1.2M``)::

      12s  in 1,913 @390/s  out 375 @75/s  lag 1,104  batch 5.2s  late 17

``in``: page views the pipeline read; ``out``: records it wrote (window updates and
stragglers); ``@n/s``: rate over the last :data:`RATE_WINDOW_S` seconds; ``lag``: records
in the input topic the pipeline has not committed yet (high watermark minus the query's
committed end offsets); ``batch``: how long the last micro-batch took; ``late``:
stragglers behind the watermark so far.  The runner redraws it in place (``\\r``) on a
terminal and prints one line per update otherwise.
"""

from __future__ import annotations

import shutil
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

RATE_WINDOW_S = 10.0


@dataclass(frozen=True, slots=True)
class Progress:
    """One snapshot of the running demo."""

    elapsed_s: float
    produced: int  # events the broker acknowledged
    records_in: int  # rows the pipeline processed
    records_out: int  # records written to the output and side-output topics
    late: int  # stragglers diverted to the side output
    consumer_lag: int | None  # high watermark minus the pipeline's committed offsets
    batches: int
    batch_duration_s: float | None
    watermark_ms: int | None
    in_rate: float = 0.0  # records_in per second, recent
    out_rate: float = 0.0  # records_out per second, recent


class RateMeter:
    """Rate of a growing counter over the last ``window_s`` seconds of samples.

    Micro-batches land every few seconds, so a per-second difference jumps between 0 and
    thousands; a window of several batches reads steadily.  Not thread-safe.
    """

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self._window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, at_s: float, value: int) -> float:
        """Record ``value`` at time ``at_s`` (monotonic seconds); returns the rate per second."""
        self._samples.append((at_s, value))
        while len(self._samples) > 2 and at_s - self._samples[1][0] >= self._window_s:
            self._samples.popleft()
        first_s, first = self._samples[0]
        return 0.0 if at_s <= first_s else (value - first) / (at_s - first_s)


def clock(ms: int | None) -> str:
    """``HH:MM`` (UTC) of an epoch-ms time; ``-`` for none."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M")


def compact(n: float) -> str:
    """``9,876``, ``98.8k``, ``988k``, ``1.2M``: at most six characters below a billion."""
    if n < 10_000:
        return f"{n:,.0f}"
    if n < 100_000:
        return f"{n / 1000:.1f}k"
    if n < 999_500:
        return f"{n / 1000:.0f}k"
    return f"{n / 1_000_000:.1f}M" if n < 99_950_000 else f"{n / 1_000_000:.0f}M"


def _rate(per_s: float) -> str:
    return f"{compact(per_s)}/s"


def format_progress(p: Progress) -> str:
    """The one-line progress display (see the module docstring)."""
    lag = "-" if p.consumer_lag is None else compact(p.consumer_lag)
    head = f"{p.elapsed_s:5.0f}s  "
    if p.batches == 0:
        return f"{head}produced {compact(p.produced)}  lag {lag}  waiting for the first micro-batch"
    took = "-" if p.batch_duration_s is None else f"{p.batch_duration_s:.1f}s"
    return (
        f"{head}in {compact(p.records_in)} @{_rate(p.in_rate)}  out {compact(p.records_out)} "
        f"@{_rate(p.out_rate)}  lag {lag}  batch {took}  late {compact(p.late)}"
    )


def fit(line: str, columns: int) -> str:
    """``line`` cut to ``columns - 1`` characters, so a redraw never wraps."""
    return line if len(line) < columns else line[: max(1, columns - 2)] + "~"


class ProgressDisplay:
    """Shows :class:`Progress`: redrawn in place on a terminal, else one line per second.

    On a terminal each update is ``\r`` + the line cut to the width + erase-to-end, and
    :meth:`end_line` moves below it before anything else is printed.  Not thread-safe.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._tty = out.isatty()
        self._drawn = False
        self._last_second = -1

    def show(self, p: Progress, force: bool = False) -> None:
        """Draw ``p``; off a terminal at most once a second, unless ``force`` (a final line)."""
        line = format_progress(p)
        if self._tty:
            columns = shutil.get_terminal_size((80, 24)).columns
            self._out.write("\r" + fit(line, columns) + "\x1b[K")
            self._drawn = True
        elif force or int(p.elapsed_s) != self._last_second:
            self._out.write(line + "\n")
        self._last_second = int(p.elapsed_s)
        self._out.flush()

    def end_line(self) -> None:
        """End an in-place line (a no-op when none is drawn)."""
        if self._drawn:
            self._out.write("\n")
            self._out.flush()
            self._drawn = False


@dataclass(frozen=True, slots=True)
class Summary:
    """What one demo run did, for the closing summary."""

    produced: int
    in_order: int
    out_of_order: int
    late_generated: int
    jitter_ms: int
    late_by_ms: int
    records_in: int
    records_out: int
    stragglers: int
    malformed: int
    batches: int
    last_batch_s: float | None
    watermark_ms: int | None
    allowed_delay_ms: int
    first_event_ms: int | None
    last_event_ms: int | None
    streaming_s: float
    startup_s: float
    wall_s: float


def duration(ms: int) -> str:
    """An event-time span for people: ``2 h``, ``10 min``, ``90 s``."""
    if ms and ms % 3_600_000 == 0:
        return f"{ms // 3_600_000} h"
    if ms % 60_000 == 0:
        return f"{ms // 60_000} min"
    return f"{ms / 1000:g} s"


def format_summary(s: Summary) -> str:
    """The closing summary, a few lines under 80 columns."""
    span = ""
    if s.first_event_ms is not None and s.last_event_ms is not None:
        span = f", event time {clock(s.first_event_ms)}-{clock(s.last_event_ms)} UTC"
    rate = s.produced / s.streaming_s if s.streaming_s > 0 else 0.0
    on_time = s.records_in - s.stragglers - s.malformed
    last = "" if s.last_batch_s is None else f" (last took {s.last_batch_s:.1f} s)"
    lines = [
        "summary",
        f"  produced   {s.produced:,} page views in {s.streaming_s:.0f} s ({rate:,.0f}/s){span}",
        f"             {s.in_order:,} in order, {s.out_of_order:,} out of order "
        f"(up to {duration(s.jitter_ms)}), {s.late_generated:,} late ({duration(s.late_by_ms)})",
        f"  pipeline   read {s.records_in:,} in {s.batches:,} micro-batches{last}",
        f"             {on_time:,} on time (counted), {s.stragglers:,} stragglers behind the "
        "watermark",
        f"             {s.records_out:,} records written (window totals and stragglers)",
    ]
    if s.malformed:
        lines.append(f"             {s.malformed:,} malformed (side output)")
    if s.watermark_ms is not None:
        lines.append(
            f"  watermark  {clock(s.watermark_ms)} UTC (max event time seen - "
            f"{duration(s.allowed_delay_ms)} allowed delay)"
        )
    lines.append(f"  wall time  {s.wall_s:.0f} s (Spark start-up {s.startup_s:.0f} s)")
    return "\n".join(lines)
