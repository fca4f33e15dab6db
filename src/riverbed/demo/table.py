"""The per-user-per-hour table the demo ends with: tumbling and hopping counts side by side.

One row per (user, event-time hour); busiest users first, each user's hours in order;
a short table shows the rows with the largest counts, in that order::

                                           hopping 1 h windows
    user      hour (UTC)        tumbling   +00   +15   +30   +45  late
    --------  ----------------  --------  ----  ----  ----  ----  ----
    user-000  2024-01-01 01:00       323   323   330   318   321     2

``tumbling`` counts the hour [hh:00, hh+1:00); ``+15`` is the hopping window
[hh:15, hh+1:15), and so on every ``slide_ms`` (so ``+00`` always equals ``tumbling``);
``late`` counts that hour's stragglers, which are in neither.  Pure formatting of
:class:`~riverbed.pipelines.pageviews_store.WindowCount`-like rows (no I/O, no pyspark).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

HOUR_MS = 3_600_000


class WindowRow(Protocol):
    """A row of a window view (``WindowCount`` satisfies it)."""

    @property
    def user_id(self) -> str: ...
    @property
    def window_start_ms(self) -> int: ...
    @property
    def count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class UserHour:
    """One row of the table; ``hopping[k]`` is the window starting ``k * slide`` into the hour."""

    user_id: str
    hour_start_ms: int
    tumbling: int
    hopping: tuple[int | None, ...]
    late: int


def user_hours(
    tumbling: Iterable[WindowRow],
    hopping: Iterable[WindowRow] = (),
    late: Iterable[WindowRow] = (),
    *,
    window_ms: int = HOUR_MS,
    slide_ms: int = 15 * 60_000,
) -> list[UserHour]:
    """Rows for every (user, hour) with a tumbling count or stragglers.

    Busiest users first (total tumbling count, descending; then user id), each user's
    hours in order -- so the first rows are the heaviest users' timelines.
    """
    slots = max(1, window_ms // slide_ms)
    counts: dict[tuple[str, int], int] = {(r.user_id, r.window_start_ms): r.count for r in tumbling}
    stragglers: dict[tuple[str, int], int] = {}
    for row in late:
        key = (row.user_id, row.window_start_ms - row.window_start_ms % window_ms)
        stragglers[key] = stragglers.get(key, 0) + row.count
    hops: dict[tuple[str, int, int], int] = {}
    for row in hopping:
        offset = row.window_start_ms % window_ms
        if offset % slide_ms == 0:
            hops[(row.user_id, row.window_start_ms - offset, offset // slide_ms)] = row.count
    rows = [
        UserHour(
            user,
            hour,
            counts.get((user, hour), 0),
            tuple(hops.get((user, hour, k)) for k in range(slots)),
            stragglers.get((user, hour), 0),
        )
        for user, hour in set(counts) | set(stragglers)
    ]
    totals: dict[str, int] = {}
    for user_hour in rows:
        totals[user_hour.user_id] = totals.get(user_hour.user_id, 0) + user_hour.tumbling
    return sorted(rows, key=lambda r: (-totals[r.user_id], r.user_id, r.hour_start_ms))


def _largest(rows: list[UserHour], top: int) -> list[UserHour]:
    chosen = set(sorted(range(len(rows)), key=lambda i: (-rows[i].tumbling, i))[:top])
    return [row for i, row in enumerate(rows) if i in chosen]


def _hour_label(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:00")


def format_user_hours(rows: list[UserHour], top: int = 12, slide_ms: int = 15 * 60_000) -> str:
    """The ``top`` largest tumbling counts as an aligned text table, in ``rows``' order.

    Picking by count keeps the sparse edge hours (a few out-of-order views before the
    stream's first hour) out of a short table; keeping the order keeps users together.
    """
    if not rows:
        return "(no page views counted)"
    slots = len(rows[0].hopping)
    hop_labels = [f"+{k * slide_ms // 60_000:02d}" for k in range(slots)]
    header = ["user", "hour (UTC)", "tumbling", *hop_labels, "late"]
    body = [
        [
            r.user_id,
            _hour_label(r.hour_start_ms),
            str(r.tumbling),
            *("" if h is None else str(h) for h in r.hopping),
            str(r.late),
        ]
        for r in _largest(rows, top)
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    widths[3 : 3 + slots] = [max(w, 4) for w in widths[3 : 3 + slots]]

    def render(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    hop_width = sum(widths[3 : 3 + slots]) + 2 * (slots - 1)
    indent = sum(widths[:3]) + 2 * 3
    lines = [
        " " * indent + "hopping 1 h windows".center(hop_width).rstrip(),
        render(header),
        "  ".join("-" * w for w in widths),
        *(render(cells) for cells in body),
    ]
    if len(rows) > top:
        lines.append(f"... {len(rows) - top:,} more rows (of {len(rows):,})")
    return "\n".join(line.rstrip() for line in lines)


def sqlite_hint(database: Path) -> str:
    """A ``sqlite3`` command line printing the whole tumbling table from ``database``."""
    return (
        f'sqlite3 -header -column {shlex.quote(str(database))} "SELECT user_id, '
        "datetime(window_start_ms / 1000, 'unixepoch') AS hour, count "
        'FROM pageviews_per_user_hour ORDER BY hour, user_id"'
    )
