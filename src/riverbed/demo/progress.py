"""What ``riverbed demo`` prints: a live progress line and the final per-user-per-hour table.

Pure formatting of plain values (no I/O, no pyspark), so it is tested directly.  The
progress line is redrawn in place (``\\r``) on a terminal and printed once per update
otherwise (logs, pipes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol


class HourlyCount(Protocol):
    """A row of the per-user-per-hour table (``WindowCount`` satisfies it)."""

    @property
    def user_id(self) -> str: ...
    @property
    def window_start_ms(self) -> int: ...
    @property
    def count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Progress:
    """One snapshot of the running demo."""

    elapsed_s: float
    produced: int  # events the generator had acknowledged by the broker
    records_in: int  # rows the pipeline processed
    records_out: int  # records written to the output and side-output topics
    late: int  # stragglers diverted to the side output
    consumer_lag: int | None  # high watermark minus the pipeline's committed offsets
    batches: int
    batch_duration_s: float | None
    watermark_ms: int | None


def _clock(ms: int | None) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M")


def format_progress(p: Progress) -> str:
    lag = "-" if p.consumer_lag is None else f"{p.consumer_lag:,}"
    duration = "-" if p.batch_duration_s is None else f"{p.batch_duration_s:.1f}s"
    return (
        f"[{p.elapsed_s:5.0f}s] produced {p.produced:,} | in {p.records_in:,} | "
        f"out {p.records_out:,} | late {p.late:,} | lag {lag} | batches {p.batches} "
        f"({duration} last) | watermark {_clock(p.watermark_ms)}"
    )


def format_hourly_table(
    counts: Iterable[HourlyCount], stragglers: Iterable[HourlyCount] = (), max_hours: int = 8
) -> str:
    """Users down, event-time hours (UTC) across; the last ``max_hours`` hours shown."""
    cells: dict[tuple[str, int], int] = {}
    late: dict[str, int] = {}
    for row in counts:
        cells[(row.user_id, row.window_start_ms)] = row.count
    for row in stragglers:
        late[row.user_id] = late.get(row.user_id, 0) + row.count
    if not cells:
        return "(no page views counted)"
    hours = sorted({hour for _, hour in cells})[-max_hours:]
    users = sorted({user for user, _ in cells} | set(late))
    header = ["user"] + [_hour_label(h) for h in hours] + ["total", "late"]
    body = [
        [user]
        + [str(cells.get((user, h), "")) for h in hours]
        + [str(sum(c for (u, _), c in cells.items() if u == user)), str(late.get(user, 0))]
        for user in users
    ]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                  for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
        for row in [header, *body]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _hour_label(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:00")
