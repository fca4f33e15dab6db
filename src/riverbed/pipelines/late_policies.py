"""One windowed count with three policies for late events: drop (counted), side output,
update (a correction of an already emitted window).

The count is per tumbling event-time window ``[start, start + window_ms)`` (``start`` a
multiple of ``window_ms``, epoch ms).  As in Spark, the watermark a micro-batch sees is
the largest ``ts`` of the *earlier* micro-batches minus ``delay_ms``.  An event is
**late** when its window has already closed: ``start + window_ms <= watermark``.  (Spark's
own aggregation drops every ``ts <= watermark`` row, even one whose window is still
open; here such a row still counts.)

Per micro-batch, in this order (rows of one micro-batch are taken sorted by ``ts``, then
event text):

1. each on-time event adds one to its open window;
2. each late event, by policy:

   * ``drop``: ignored, counted; one ``dropped`` row per micro-batch that dropped any
     (``count`` = the pipeline's total so far, ``previous`` = the total before);
   * ``side``: one ``late`` row carrying the event (``event``, its JSON text), for a side
     topic; the count is unchanged;
   * ``update``: the closed window's count is incremented and one ``correction`` row per
     window and micro-batch is emitted (``count`` = the new total, ``previous`` = the
     value emitted before: the ``final`` count or the last correction).  Closed windows
     are kept ``retention_ms`` past their end (then a late event for them is dropped and
     counted as under ``drop``);

3. the watermark moves to this micro-batch's largest ``ts`` minus ``delay_ms``; each open
   window with ``end <= watermark`` is emitted once as ``final`` (windows in start order).

Output rows (:data:`OUTPUT_SCHEMA`): ``kind`` (``final`` | ``late`` | ``correction`` |
``dropped``), ``window_start``, ``window_end``, ``count``, ``previous`` (longs, null where
they do not apply), ``event`` (string, ``late`` rows only).

State format (:meth:`LateWindowCounter.state`): JSON ``{"max_ts": int | null, "open":
{start: count}, "closed": {start: count}, "dropped": int}``; on Spark it is the state of
the one group of :func:`late_window_counts` (a single key: the watermark is the whole
pipeline's), checkpointed with the query, so a restart resumes it.  Windows close only
when a later event moves the watermark (there is no timer).  Not thread-safe.

:func:`late_window_counts_per_policy` runs several policies side by side, one key each.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from riverbed.errors import ConfigError

Policy = Literal["drop", "side", "update"]
POLICIES: tuple[Policy, ...] = ("drop", "side", "update")
OUTPUT_SCHEMA = (
    "kind string, window_start long, window_end long, count long, previous long, event string"
)


@dataclass(frozen=True, slots=True)
class Output:
    kind: str
    window_start: int | None = None
    window_end: int | None = None
    count: int | None = None
    previous: int | None = None
    event: str | None = None


class LateWindowCounter:
    """The windowed count and its late-event policy (see the module docstring)."""

    def __init__(
        self,
        window_ms: int,
        delay_ms: int,
        policy: Policy,
        retention_ms: int = 24 * 3600 * 1000,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ConfigError(f"unknown late-event policy {policy!r}: one of {POLICIES}")
        if window_ms <= 0 or delay_ms < 0 or retention_ms < 0:
            raise ConfigError("window_ms must be positive, delay_ms and retention_ms not negative")
        self.window_ms, self.delay_ms = window_ms, delay_ms
        self.policy, self.retention_ms = policy, retention_ms
        state = state or {}
        max_ts = state.get("max_ts")
        self.max_ts: int | None = None if max_ts is None else int(max_ts)
        self.open: dict[int, int] = {int(k): int(v) for k, v in state.get("open", {}).items()}
        self.closed: dict[int, int] = {int(k): int(v) for k, v in state.get("closed", {}).items()}
        self.dropped = int(state.get("dropped", 0))

    def state(self) -> dict[str, Any]:
        return {
            "max_ts": self.max_ts,
            "open": {str(k): v for k, v in self.open.items()},
            "closed": {str(k): v for k, v in self.closed.items()},
            "dropped": self.dropped,
        }

    @property
    def watermark(self) -> int | None:
        return None if self.max_ts is None else self.max_ts - self.delay_ms

    def process(self, batch: Iterable[tuple[int, str]]) -> list[Output]:
        """One micro-batch of ``(ts, event JSON)``; the rows it emits."""
        rows = sorted(batch)
        watermark, w = self.watermark, self.window_ms
        out: list[Output] = []
        dropped_before = self.dropped
        corrected: dict[int, int] = {}  # window start -> the value emitted before
        for ts, event in rows:
            start = ts - ts % w
            if watermark is None or start + w > watermark:
                self.open[start] = self.open.get(start, 0) + 1
            elif self.policy == "side":
                out.append(Output("late", start, start + w, event=event))
            elif self.policy == "update" and start + w > watermark - self.retention_ms:
                previous = self.closed.get(start, 0)
                corrected.setdefault(start, previous)
                self.closed[start] = previous + 1
            else:
                self.dropped += 1
        for start, previous in sorted(corrected.items()):
            out.append(Output("correction", start, start + w, self.closed[start], previous))
        if self.dropped != dropped_before:
            out.append(Output("dropped", count=self.dropped, previous=dropped_before))
        if rows:
            top = rows[-1][0]
            self.max_ts = top if self.max_ts is None else max(self.max_ts, top)
        watermark = self.watermark
        if watermark is not None:
            for start in sorted(s for s in self.open if s + w <= watermark):
                count = self.open.pop(start)
                out.append(Output("final", start, start + w, count))
                if self.policy == "update":
                    self.closed[start] = count
            horizon = watermark - self.retention_ms
            self.closed = {s: c for s, c in self.closed.items() if s + w > horizon}
        return out


class LateWindowFunction:
    """The ``applyInPandasWithState`` function (pickled to Spark's Python workers)."""

    def __init__(self, window_ms: int, delay_ms: int, policy: Policy, retention_ms: int) -> None:
        self.args = (window_ms, delay_ms, policy, retention_ms)
        LateWindowCounter(*self.args)  # validate on the driver

    def __call__(
        self, key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        saved = json.loads(state.get[0]) if state.exists else None
        counter = LateWindowCounter(*self.args, state=saved)
        batch = [
            (int(ts), str(event))
            for frame in frames
            for ts, event in zip(frame["ts"], frame["event"], strict=True)
        ]
        out = counter.process(batch)
        state.update((json.dumps(counter.state()),))
        if out:
            yield pd.DataFrame(
                {
                    "kind": [o.kind for o in out],
                    "window_start": pd.array([o.window_start for o in out], dtype="Int64"),
                    "window_end": pd.array([o.window_end for o in out], dtype="Int64"),
                    "count": pd.array([o.count for o in out], dtype="Int64"),
                    "previous": pd.array([o.previous for o in out], dtype="Int64"),
                    "event": [o.event for o in out],
                }
            )


def late_window_counts(
    events: DataFrame,
    ts_col: str,
    window_ms: int,
    delay_ms: int,
    policy: Policy,
    retention_ms: int = 24 * 3600 * 1000,
) -> DataFrame:
    """The :data:`OUTPUT_SCHEMA` rows of the windowed count of ``events`` (``ts_col``:
    epoch ms, long) under ``policy``; ``event`` is each row's JSON.  Append mode; no
    Spark watermark needed (the counter keeps its own).  Rows with a null ``ts`` are
    skipped.  Route ``kind = 'late'`` rows to the side topic and the rest to the output.
    """
    keyed = events.filter(F.col(ts_col).isNotNull()).select(
        F.lit(0).alias("pipeline"),
        F.col(ts_col).cast("long").alias("ts"),
        F.to_json(F.struct(*events.columns)).alias("event"),
    )
    return keyed.groupBy("pipeline").applyInPandasWithState(
        LateWindowFunction(window_ms, delay_ms, policy, retention_ms),
        OUTPUT_SCHEMA,
        "state string",
        "append",
        GroupStateTimeout.NoTimeout,
    )


class PoliciesFunction:
    """:class:`LateWindowFunction` for several policies in one operator: key = the
    policy; each output row gets its ``policy``."""

    def __init__(
        self, window_ms: int, delay_ms: int, policies: Sequence[Policy], retention_ms: int
    ) -> None:
        self.functions: dict[str, LateWindowFunction] = {
            p: LateWindowFunction(window_ms, delay_ms, p, retention_ms) for p in policies
        }

    def __call__(
        self, key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        policy = str(key[0])
        for frame in self.functions[policy](key, frames, state):
            yield frame.assign(policy=policy)


def late_window_counts_per_policy(
    events: DataFrame,
    ts_col: str,
    window_ms: int,
    delay_ms: int,
    policies: Sequence[Policy],
    retention_ms: int = 24 * 3600 * 1000,
) -> DataFrame:
    """:func:`late_window_counts` under each of ``policies`` side by side in one
    operator (one state key per policy, so the policies run in parallel; every event is
    counted under each): :data:`OUTPUT_SCHEMA` rows plus ``policy``.  Append mode; no
    Spark watermark.

    Why not one key per window on Spark's watermark: Spark drops the rows behind the
    previous micro-batch's watermark before a stateful operator with event-time timers
    (found on Spark), so such an operator never sees the late events the policies are
    for; the counter keeps its own watermark instead, which needs one key per pipeline.
    """
    if not policies or any(p not in POLICIES for p in policies):
        raise ConfigError(f"policies must be some of {POLICIES}")
    function = PoliciesFunction(window_ms, delay_ms, policies, retention_ms)
    keyed = events.filter(F.col(ts_col).isNotNull()).select(
        F.explode(F.array(*[F.lit(p) for p in policies])).alias("policy"),
        F.col(ts_col).cast("long").alias("ts"),
        F.to_json(F.struct(*events.columns)).alias("event"),
    )
    return keyed.groupBy("policy").applyInPandasWithState(
        function,
        OUTPUT_SCHEMA + ", policy string",
        "state string",
        "append",
        GroupStateTimeout.NoTimeout,
    )
