"""LateWindowCounter (riverbed.pipelines.late_policies) without Spark: the hand-written
case of docs/time-and-patterns.md under each policy, and each policy's invariant on
seeded shuffled input."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from riverbed.errors import ConfigError
from riverbed.pipelines.late_policies import POLICIES, LateWindowCounter, Output, Policy

# window 10, delay 5.  Watermark after each batch: 7, 20, 20, 26.
#  batch 1: 1 12 3      [0---)[10--)
#  batch 2: 25 4        -> wm 20: final [0,10)=3, [10,20)=1
#  batch 3: 8 15 9 22   8, 9, 15 late (their windows closed); 22 on time
#  batch 4: 35          -> wm 30: final [20,30)=2
BATCHES = [[1, 12, 3], [25, 4], [8, 15, 9, 22], [35]]
FINALS = [
    [],
    [Output("final", 0, 10, 3), Output("final", 10, 20, 1)],
    [],
    [Output("final", 20, 30, 2)],
]
THIRD = {
    "drop": [Output("dropped", count=3, previous=0)],
    "side": [
        Output("late", 0, 10, event="e8"),
        Output("late", 0, 10, event="e9"),
        Output("late", 10, 20, event="e15"),
    ],
    "update": [Output("correction", 0, 10, 5, 3), Output("correction", 10, 20, 2, 1)],
}


def run(counter: LateWindowCounter, batches: list[list[int]]) -> list[list[Output]]:
    return [counter.process([(ts, f"e{ts}") for ts in batch]) for batch in batches]


@pytest.mark.parametrize("policy", POLICIES)
def test_hand_written_case(policy: Policy) -> None:
    expected = [FINALS[0], FINALS[1], THIRD[policy], FINALS[3]]
    assert run(LateWindowCounter(10, 5, policy), BATCHES) == expected


@pytest.mark.parametrize("policy", POLICIES)
def test_state_round_trip(policy: Policy) -> None:
    """A counter rebuilt from its state (a restart) continues as if nothing happened."""
    first = LateWindowCounter(10, 5, policy)
    head = run(first, BATCHES[:2])
    resumed = LateWindowCounter(10, 5, policy, state=first.state())
    assert head + run(resumed, BATCHES[2:]) == run(LateWindowCounter(10, 5, policy), BATCHES)


def test_update_past_retention_is_dropped() -> None:
    counter = LateWindowCounter(10, 0, "update", retention_ms=10)
    run(counter, [[1], [35]])  # wm 35: [0,10) final, and forgotten (end 10 <= 35 - 10)
    assert counter.process([(2, "x")]) == [Output("dropped", count=1, previous=0)]


@pytest.mark.parametrize("seed", range(10))
def test_each_policy_accounts_for_every_event(seed: int) -> None:
    rng = random.Random(seed)
    events = [rng.randint(0, 2000) for _ in range(300)]
    arrivals = sorted(events, key=lambda ts: ts + rng.randint(0, 150))
    exact = Counter(ts - ts % 50 for ts in events)
    batches = [arrivals[i : i + 30] for i in range(0, len(arrivals), 30)] + [[10_000]]
    exact[10_000] += 1
    for policy in POLICIES:
        out = [o for b in run(LateWindowCounter(50, 40, policy), batches) for o in b]
        latest: dict[int, int] = {}
        for o in out:
            if o.kind in ("final", "correction"):
                assert o.window_start is not None and o.count is not None
                latest[o.window_start] = o.count
        late = Counter(o.window_start for o in out if o.kind == "late")
        dropped = max([o.count or 0 for o in out if o.kind == "dropped"], default=0)
        open_last = {10_000: 1}  # the last window never closes
        if policy == "update":  # the corrected counts are the batch answer
            assert {**latest, **open_last} == dict(exact)
        elif policy == "side":  # final + side output = the batch answer
            merged = Counter(latest) + late + Counter(open_last)
            assert merged == exact
        else:
            assert sum(latest.values()) + dropped + 1 == len(events) + 1
            assert all(latest[s] <= exact[s] for s in latest)


def test_bad_config() -> None:
    with pytest.raises(ConfigError):
        LateWindowCounter(10, 5, "ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        LateWindowCounter(0, 5, "drop")
