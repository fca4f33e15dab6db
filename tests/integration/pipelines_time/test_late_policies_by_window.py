"""The late policies with their state spread over one key per window
(late_policies.late_window_counts_by_window) give the single-key counter's answers
(LateWindowCounter) on seeded input with late events, no Spark: the operator's function
over simulated micro-batches as Spark runs it (every row handed to the function with the
batch's watermark, event-time timers fired for keys without data, a no-data batch after
the watermark moved), state round-tripped through JSON."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import pytest

from riverbed.pipelines.late_policies import (
    POLICIES,
    LateWindowCounter,
    Output,
    Policy,
    WindowLateFunction,
)

WINDOW = 10
DELAY = 5
RETENTION = 30


class FakeState:
    def __init__(self, saved: str | None, timeout: int | None, timed_out: bool, wm: int) -> None:
        self.saved, self.timeout, self.hasTimedOut, self.wm = saved, timeout, timed_out, wm

    @property
    def exists(self) -> bool:
        return self.saved is not None

    @property
    def get(self) -> tuple[str]:
        assert self.saved is not None
        return (self.saved,)

    def update(self, value: tuple[str]) -> None:
        self.saved = value[0]

    def remove(self) -> None:
        self.saved, self.timeout = None, None

    def getCurrentWatermarkMs(self) -> int:
        return self.wm

    def setTimeoutTimestamp(self, ts: int) -> None:
        assert ts >= self.wm, "Spark refuses a timer behind the watermark"
        self.timeout = ts


def _outputs(frames: Any) -> list[Output]:
    out = []
    for frame in frames:
        for row in frame.to_dict("records"):
            plain = {k: (None if v is pd.NA or v != v else v) for k, v in row.items()}
            out.append(
                Output(
                    plain["kind"],
                    plain["window_start"],
                    plain["window_end"],
                    plain["count"],
                    plain["previous"],
                    plain["event"],
                )
            )
    return out


def by_window(batches: list[list[int]], policy: Policy) -> list[Output]:
    function = WindowLateFunction(WINDOW, policy, RETENTION)
    states: dict[int, tuple[str | None, int | None]] = {}
    out: list[Output] = []
    max_ts: int | None = None
    watermark = 0
    for rows in [*batches, [], []]:  # then no-data batches for the timers
        touched: dict[int, list[int]] = {}
        for ts in rows:
            touched.setdefault(ts - ts % WINDOW, []).append(ts)
        for start, window_rows in sorted(touched.items()):
            saved, timeout = states.pop(start, (None, None))
            state = FakeState(saved, timeout, False, watermark)
            frame = pd.DataFrame({"ts": window_rows, "event": [f"e{t}" for t in window_rows]})
            out.extend(_outputs(function((start,), iter([frame]), state)))
            if state.saved is not None:
                states[start] = (state.saved, state.timeout)
        for start in sorted(states):
            saved, timeout = states[start]
            if start in touched or timeout is None or timeout >= watermark:
                continue
            state = FakeState(saved, timeout, True, watermark)
            del states[start]
            out.extend(_outputs(function((start,), iter([]), state)))
            if state.saved is not None:
                states[start] = (state.saved, state.timeout)
        if rows:
            max_ts = max(rows) if max_ts is None else max(max_ts, *rows)
            watermark = max(watermark, max_ts - DELAY)
    return out


def single_key(batches: list[list[int]], policy: Policy) -> list[Output]:
    counter = LateWindowCounter(WINDOW, DELAY, policy, RETENTION)
    out = []
    for rows in batches:
        state = json.loads(json.dumps(counter.state()))
        counter = LateWindowCounter(WINDOW, DELAY, policy, RETENTION, state=state)
        out.extend(counter.process((ts, f"e{ts}") for ts in rows))
    return out


def _summary(out: list[Output]) -> dict[str, Any]:
    latest: dict[int, int] = {}
    for o in out:
        if o.kind == "correction":
            assert o.window_start is not None and o.count is not None
            latest[o.window_start] = o.count
    dropped = [o for o in out if o.kind == "dropped"]
    return {
        "final": sorted((o.window_start, o.count) for o in out if o.kind == "final"),
        "late": sorted(str(o.event) for o in out if o.kind == "late"),
        "corrections": latest,
        "dropped": sum((o.count or 0) - (o.previous or 0) for o in dropped),
    }


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", range(8))
def test_by_window_equals_single_key(policy: Policy, seed: int) -> None:
    rng = random.Random(seed)
    ts = sorted(rng.randrange(300) for _ in range(200))
    arrivals = []
    for t in ts:  # mostly within the delay, some far behind (late), a few very late
        arrivals.append((t + rng.choice([0, 0, 1, 3, 4, 12, 25, 60]), t))
    arrivals.sort()
    events = [t for _, t in arrivals]
    step = rng.choice([5, 13, 40])
    batches = [events[i : i + step] for i in range(0, len(events), step)]
    ours, theirs = _summary(by_window(batches, policy)), _summary(single_key(batches, policy))
    # finals: the single-key counter closes windows only up to its last watermark too
    assert ours == theirs
    if policy == "update":
        assert ours["corrections"]
    else:
        assert ours["late" if policy == "side" else "dropped"]
    assert Counter(k for k, _ in ours["final"]).most_common(1)[0][1] == 1
