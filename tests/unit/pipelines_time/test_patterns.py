"""The pattern API (riverbed.pipelines.patterns) on hand-written event sequences.

Timelines: one letter per event, its ts below (minutes); ``^`` marks the match's events.
"""

from __future__ import annotations

from typing import Any

import pytest

from riverbed.errors import ConfigError
from riverbed.pipelines.event_order import EventOrderBuffer
from riverbed.pipelines.patterns import (
    Event,
    Match,
    Matcher,
    Pattern,
    count_within,
    field_equals,
    field_in,
)

M = 60_000
A, B, C, X = (field_equals("t", k) for k in "ABCX")


def feed(pattern: Pattern, letters: str, times: list[int] | None = None) -> list[Match]:
    """Feed ``letters`` (ts = position in minutes unless ``times``), then advance far."""
    matcher = Matcher(pattern)
    out: list[Match] = []
    stamps = times or list(range(len(letters)))
    for letter, minute in zip(letters, stamps, strict=True):
        # round-trip the state between events, as the Spark adapter does
        matcher = Matcher(pattern, matcher.state())
        out.extend(matcher.feed(Event(minute * M, {"t": letter})))
    out.extend(matcher.advance_to(10**9 * M))
    return out


def stamps(match: Match) -> dict[str, list[int]]:
    return {name: [e.ts // M for e in events] for name, events in match.events.items()}


def test_strict_sequence() -> None:
    p = Pattern.begin("a", A).next("b", B).next("c", C)
    # A B C A X B C
    # ^ ^ ^
    assert [stamps(m) for m in feed(p, "ABCAXBC")] == [{"a": [0], "b": [1], "c": [2]}]


def test_relaxed_sequence_skips_unrelated_events() -> None:
    p = Pattern.begin("a", A).followed_by("b", B).followed_by("c", C)
    # A X B X X C | A B C
    # ^   ^     ^ | ^ ^ ^
    assert [stamps(m) for m in feed(p, "AXBXXCABC")] == [
        {"a": [0], "b": [2], "c": [5]},
        {"a": [6], "b": [7], "c": [8]},
    ]


def test_within_is_inclusive() -> None:
    p = Pattern.begin("a", A).followed_by("b", B).within(5 * M)
    assert [stamps(m) for m in feed(p, "AB", [0, 5])] == [{"a": [0], "b": [5]}]
    assert feed(p, "AB", [0, 6]) == []


def test_repetition_exact_consecutive_reports_the_last_ones() -> None:
    p = Pattern.begin("a", A).times(3).next("b", B)
    # A A A A A B
    #     ^ ^ ^ ^
    assert [stamps(m) for m in feed(p, "AAAAAB")] == [{"a": [2, 3, 4], "b": [5]}]
    assert feed(p, "AAXAB") == []


def test_repetition_at_least_takes_the_earliest_start() -> None:
    p = Pattern.begin("a", A).times_or_more(2).next("b", B)
    assert [stamps(m) for m in feed(p, "XAAAAB")] == [{"a": [1, 2, 3, 4], "b": [5]}]
    assert feed(p, "AB") == []


def test_repetition_with_gaps_is_a_sliding_window_count() -> None:
    # three A within 2 minutes, other events in between allowed
    p = Pattern.begin("a", A).times(3).allow_gaps().within(2 * M)
    # A A X A A A at 0 1 2 3 4 5: 0..3 is more than 2 min; 3, 4, 5 match
    assert [stamps(m) for m in feed(p, "AAXAAA", [0, 1, 2, 3, 4, 5])] == [{"a": [3, 4, 5]}]
    # A X A X A at 0 1 1 2 2: X skipped, exactly 2 min
    assert [stamps(m) for m in feed(p, "AXAXA", [0, 1, 1, 2, 2])] == [{"a": [0, 1, 2]}]


def test_strict_next_after_a_repetition_with_gaps() -> None:
    p = Pattern.begin("a", A).times(2, 3).allow_gaps().next("b", B)
    assert [stamps(m) for m in feed(p, "AXAB")] == [{"a": [0, 2], "b": [3]}]
    assert feed(p, "AXAXB") == []  # B does not follow the last A directly


def test_count_within_helper() -> None:
    p = count_within("a", A, 3, 2 * M)
    assert [stamps(m) for m in feed(p, "AXAXA", [0, 1, 1, 2, 2])] == [{"a": [0, 1, 2]}]
    # A at 0 1 5 6 7: none within 2 min until 5 6 7; each event in one match at most
    assert [stamps(m) for m in feed(p, "AAAAAAA", [0, 1, 5, 6, 7, 8, 9])] == [{"a": [5, 6, 7]}]


def test_negation_between_steps() -> None:
    p = Pattern.begin("a", A).not_followed_by(C).followed_by("b", B)
    assert [stamps(m) for m in feed(p, "AXB")] == [{"a": [0], "b": [2]}]
    # A C B: the C in the gap ends the partial match; a later A starts anew
    assert feed(p, "ACB") == []
    assert [stamps(m) for m in feed(p, "ACAB")] == [{"a": [2], "b": [3]}]


def test_trailing_negation_needs_within_and_fires_on_time() -> None:
    with pytest.raises(ConfigError):
        Pattern.begin("a", A).not_followed_by(B).check()
    p = Pattern.begin("a", A).not_followed_by(B).within(5 * M)
    # A at 0, B at 5 (inside the window: no match); A at 10, nothing until 16: match
    matcher = Matcher(p)
    assert matcher.feed(Event(0, {"t": "A"})) == []
    assert matcher.feed(Event(5 * M, {"t": "B"})) == []
    assert matcher.feed(Event(10 * M, {"t": "A"})) == []
    assert matcher.advance_to(15 * M) == []  # event time 15 min: the window is still open
    assert [stamps(m) for m in matcher.advance_to(15 * M + 1)] == [{"a": [10]}]
    assert matcher.open_runs == 0


def test_field_conditions() -> None:
    big = lambda e: e.get("amount", 0) > 100  # noqa: E731
    p = Pattern.begin("small", field_in("t", "AB")).next("big", big)
    matcher = Matcher(p)
    assert matcher.feed(Event(0, {"t": "A", "amount": 5})) == []
    got = matcher.feed(Event(1, {"t": "X", "amount": 500}))
    assert [[e.fields for e in m.events["big"]] for m in got] == [[{"t": "X", "amount": 500}]]


def test_builder_checks() -> None:
    with pytest.raises(ConfigError):
        Pattern.begin("a", A).next("a", B)
    with pytest.raises(ConfigError):
        Pattern.begin("a", A).times(3, 2)
    with pytest.raises(ConfigError):
        Pattern.begin("a", A).one_or_more().check()  # an unbounded last step never ends


def test_event_order_buffer_releases_by_watermark_once() -> None:
    buffer = EventOrderBuffer()
    for ts, tie in [(5, 1), (3, 0), (5, 0), (9, 0)]:
        assert buffer.add(ts, {"tie": tie}, tie)
    assert [(e.ts, e.fields["tie"]) for e in buffer.release(5)] == [(3, 0), (5, 0), (5, 1)]
    assert not buffer.add(5, {}, 0) and buffer.late == 1  # behind what was released
    restored: Any = EventOrderBuffer(buffer.state())
    assert [e.ts for e in restored.release(8)] == []
    assert [e.ts for e in restored.release(9)] == [9] and len(restored) == 0
