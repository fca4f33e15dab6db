"""MisraGries (riverbed.pipelines.approx) without Spark: known answers and its bound."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from riverbed.errors import ConfigError
from riverbed.pipelines.approx import MisraGries, hll_standard_error


def test_known_answer() -> None:
    summary = MisraGries(2)
    summary.update("aabacad")  # a:4 b:1 c:1 d:1
    # a,a,b,a: {a:3,b:1}; c: {a:3,b:1,c:1} -> all minus 1 -> {a:2}; a: {a:3}; d: {a:3,d:1}
    assert summary.state() == {"capacity": 2, "n": 7, "counts": {"a": 3, "d": 1}}
    assert summary.top(1) == [("a", 3)]
    assert summary.error_bound == 7 / 3
    assert MisraGries(2, summary.state()).top(2) == [("a", 3), ("d", 1)]


@pytest.mark.parametrize("seed", range(10))
def test_bound_holds_after_merges(seed: int) -> None:
    rng = random.Random(seed)
    items = [f"i{min(int(rng.paretovariate(1.2)), 400)}" for _ in range(3000)]
    parts = [MisraGries(20) for _ in range(4)]
    for item in items:
        rng.choice(parts).add(item)
    total = MisraGries(20)
    for part in parts:
        total.merge(part)
    exact = Counter(items)
    assert total.n == len(items)
    for item, count in exact.items():
        assert count - total.error_bound <= total.estimate(item) <= count
    # every item more frequent than the bound is kept
    assert {i for i, c in exact.items() if c > total.error_bound} <= set(total.counts)


def test_bad_capacity_and_hll_error() -> None:
    with pytest.raises(ConfigError):
        MisraGries(0)
    assert round(hll_standard_error(12), 4) == 0.0163
