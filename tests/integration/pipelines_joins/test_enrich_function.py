"""enrich's ``applyInPandasWithState`` function called directly, micro-batch by
micro-batch, with a stand-in for Spark's GroupState (no Spark session, < 1 s): the
cases whose batch boundaries a Spark run does not pin down."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from riverbed.pipelines.enrich import EnrichFunction

MIN = 60_000
COLUMNS = ["key", "kind", "event_time", "ts", "user_id", "action", "row", "partition", "offset"]


class FakeState:
    """The part of ``GroupState`` the function uses."""

    def __init__(self, watermark_ms: int) -> None:
        self.value: str | None = None
        self.watermark_ms = watermark_ms
        self.hasTimedOut = False
        self.timeout_ms: int | None = None

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple[str | None]:
        return (self.value,)

    def getCurrentWatermarkMs(self) -> int:
        return self.watermark_ms

    def update(self, value: tuple[str]) -> None:
        self.value = value[0]

    def setTimeoutTimestamp(self, ms: int) -> None:
        self.timeout_ms = ms


def change(ts: int, offset: int, name: str | None) -> dict[str, Any]:
    row = None if name is None else json.dumps({"name": json.dumps(name), "country": "null"})
    return {"kind": "c", "ts": ts, "row": row, "partition": 0, "offset": offset}


def activity(ts: int, offset: int) -> dict[str, Any]:
    return {"kind": "a", "ts": ts, "user_id": "2", "action": '"view"', "offset": offset}


def batch(
    function: EnrichFunction, state: FakeState, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    frame = pd.DataFrame([{"key": "2", "partition": 0, **r} for r in rows], columns=COLUMNS)
    state.hasTimedOut = not rows
    (out,) = list(function(("2",), iter([frame] if rows else []), state))
    return [json.loads(v) for v in out["value"]]


def test_released_activity_keeps_the_version_a_big_watermark_step_prunes() -> None:
    """The watermark passes a held activity (35 min) and the start of the next version
    (37 min) in one step: the activity still gets the version valid at 35 min."""
    function, state = EnrichFunction(emit_on_arrival=False), FakeState(0)
    rows = [
        change(15 * MIN, 0, "old"),
        change(16 * MIN, 1, None),  # deleted
        change(17 * MIN, 2, "valid-at-35"),
        change(37 * MIN, 3, "later"),
        activity(35 * MIN, 0),
    ]
    assert batch(function, state, rows) == []  # held until the watermark passes 35 min
    assert state.timeout_ms == 35 * MIN
    state.watermark_ms = 40 * MIN
    (out,) = batch(function, state, [])
    assert (out["ts"], out["name"]) == (35 * MIN, "valid-at-35")
    # and the versions the watermark left behind are pruned afterwards
    assert [v[0] for v in json.loads(state.value or "")["v"]] == [37 * MIN]
