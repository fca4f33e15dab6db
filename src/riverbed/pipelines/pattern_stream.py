"""Running a :class:`~riverbed.pipelines.patterns.Pattern` per key on a Spark stream.

:func:`match_pattern` groups a watermarked stream by key and runs
``applyInPandasWithState`` (append mode, ``GroupStateTimeout.EventTimeTimeout``) with, per
key, an :class:`~riverbed.pipelines.event_order.EventOrderBuffer` (events wait until the
watermark passes them, then are fed in event-time order) and a
:class:`~riverbed.pipelines.patterns.Matcher`.  Every match is therefore computed from
final input and emitted once (at-least-once downstream of a crash, like the sink).

Timeline for one key (``W`` = the watermark of a micro-batch)::

    batch n     events a(ts=5), c(ts=9) arrive      -> buffered, timer at 4
    batch n+1   event b(ts=7) arrives, W=8          -> a, b released and fed; c buffered,
                                                       timer at 8
    batch n+2   no data, W=9 (timer 8 < 9 fires)    -> c fed; matches emitted

State per key (one JSON string, ``STATE_SCHEMA``): the buffer's state and the matcher's
open runs; removed when both are empty.  Spark fires an event-time timer at ``t``
in the first micro-batch whose watermark is above ``t`` -- a no-data batch when the
watermark moved, also under ``availableNow``; the timer is set to the earliest buffered
``ts - 1`` (so an event is fed in the first batch whose watermark reaches its ts) or, with
``within``, the earliest run's ``first ts + within`` (expired runs are dropped and
trailing negations confirmed without new data for the key).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from riverbed.pipelines.event_order import EventOrderBuffer
from riverbed.pipelines.patterns import Match, Matcher, Pattern

STATE_SCHEMA = "state string"
OUTPUT_SCHEMA = "key string, value string"

#: (key, match) -> the output value (a JSON object), or None to emit nothing.
MatchWriter = Callable[[str, Match], dict[str, Any] | None]
#: An event's fields -> its tie-break among events of equal ts (a JSON value).
TieBreak = Callable[[dict[str, Any]], Any]


def _no_tie(fields: dict[str, Any]) -> Any:
    return 0


def _plain(value: Any) -> Any:
    """A pandas/numpy scalar as a JSON-serializable Python value."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    item = getattr(value, "item", None)
    return item() if callable(item) else value


class PatternFunction:
    """The ``applyInPandasWithState`` function (pickled to Spark's Python workers)."""

    def __init__(
        self,
        pattern: Pattern,
        ts_column: str,
        fields: Sequence[str],
        writer: MatchWriter,
        tie: TieBreak = _no_tie,
    ) -> None:
        pattern.check()
        self.pattern = pattern
        self.ts_column = ts_column
        self.fields = tuple(fields)
        self.writer = writer
        self.tie = tie

    def __call__(
        self, key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        saved = json.loads(state.get[0]) if state.exists else {}
        buffer = EventOrderBuffer(saved.get("buffer"))
        matcher = Matcher(self.pattern, saved.get("runs"))
        for frame in frames:
            for row in frame.itertuples(index=False):
                record = row._asdict()
                fields = {name: _plain(record[name]) for name in self.fields}
                buffer.add(int(record[self.ts_column]), fields, self.tie(fields))
        watermark = int(state.getCurrentWatermarkMs())
        matches: list[Match] = []
        for event in buffer.release(watermark):
            matches.extend(matcher.feed(event))
        matches.extend(matcher.advance_to(watermark))
        self._save(state, buffer, matcher, watermark)
        user = str(key[0])
        rows = [(user, value) for value in (self.writer(user, m) for m in matches) if value]
        if rows:
            yield pd.DataFrame(
                {
                    "key": [k for k, _ in rows],
                    "value": [json.dumps(v, separators=(",", ":")) for _, v in rows],
                }
            )

    def _save(
        self, state: GroupState, buffer: EventOrderBuffer, matcher: Matcher, watermark: int
    ) -> None:
        if not len(buffer) and not matcher.open_runs:
            state.remove()
            return
        state.update((json.dumps({"buffer": buffer.state(), "runs": matcher.state()}),))
        # Spark fires a timer at t in the first batch whose watermark is > t: at
        # earliest - 1 for a buffered event (released once the watermark reaches it), at
        # the deadline for a run (expired once the watermark is past it).
        wakeups = [] if buffer.earliest_ts is None else [buffer.earliest_ts - 1]
        deadline = matcher.earliest_deadline_ms()
        if deadline is not None:
            wakeups.append(deadline)
        if wakeups:
            state.setTimeoutTimestamp(max(min(wakeups), watermark, 1))


def match_pattern(
    events: DataFrame,
    key_column: str,
    ts_column: str,
    fields: Sequence[str],
    pattern: Pattern,
    writer: MatchWriter,
    tie: TieBreak = _no_tie,
) -> DataFrame:
    """``key, value`` rows (value: the writer's JSON) of ``pattern``'s matches per key.

    ``events`` must carry a watermark (``withWatermark``) and the columns ``key_column``,
    ``ts_column`` (epoch ms) and ``fields``; a match's events carry ``fields``.
    """
    function = PatternFunction(pattern, ts_column, fields, writer, tie)
    return events.groupBy(key_column).applyInPandasWithState(
        function,
        OUTPUT_SCHEMA,
        STATE_SCHEMA,
        "append",
        GroupStateTimeout.EventTimeTimeout,
    )
