"""A small complex-event-processing pattern API: per-key sequences matched by an NFA.

A :class:`Pattern` is a sequence of named steps, built like Flink CEP's::

    fraud = (
        Pattern.begin("failed", field_equals("ok", False)).times(3)
        .next("success", field_equals("ok", True))
        .within(5 * 60_000)
    )

* ``begin(name, condition)`` / ``next(...)`` (strict contiguity: the step's first event is
  the event right after the previous step's last one) / ``followed_by(...)`` (relaxed:
  events in between that match nothing are skipped);
* ``times(n)`` / ``times(n, m)`` / ``times_or_more(n)`` (``A{n}``, ``A{n,m}``, ``A{n,}``)
  on the last step; repeated events are consecutive unless ``allow_gaps()`` (then
  events matching nothing in between are skipped, Flink's default);
* ``not_followed_by(condition)``: negation -- no event between the previous step's last
  event and the next step's first may satisfy ``condition``; one that does ends the
  partial match.  At the end of a pattern it needs ``within``: the match is emitted when
  event time passes ``first event's ts + within`` without a forbidden event (the last
  positive step then takes its minimum count);
* ``within(ms)``: last event's ts - first event's ts <= ms (inclusive).

Conditions are plain predicates over an event's fields (:func:`field_equals`,
:func:`field_in`, or any ``Callable[[Mapping[str, Any]], bool]``).

Semantics (docs/time-and-patterns.md has the comparison with Flink CEP and SQL
``MATCH_RECOGNIZE``): a :class:`Matcher` is fed one key's events **in event-time order**
(the caller orders them; :mod:`riverbed.pipelines.event_order` does it for a stream).
Every event may start a partial match ("run"); runs branch where a quantifier allows
both taking one more event and moving on.  When several runs complete on the same event
the one that started earliest wins (then the longest); after a match every other run is
discarded -- ``AFTER MATCH SKIP PAST LAST ROW``.  :meth:`Matcher.advance_to` tells the
matcher that event time reached ``ts`` (the watermark): it expires runs that can no longer
finish within ``within`` and emits matches waiting on a trailing negation.

State (:meth:`Matcher.state`) is a JSON-serializable value: the open runs with their
events, so its size is bounded by the number of runs times the pattern's length; with
``within`` set, runs older than ``within`` are expired.  Not thread-safe: one matcher per
key, driven by one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from riverbed.errors import ConfigError

Condition = Callable[[Mapping[str, Any]], bool]
Contiguity = Literal["strict", "relaxed"]


def field_equals(name: str, value: Any) -> Condition:
    """``event[name] == value`` (a missing field is ``None``)."""
    return lambda event: bool(event.get(name) == value)


def field_in(name: str, values: Iterable[Any]) -> Condition:
    """``event[name] in values``."""
    allowed = frozenset(values)
    return lambda event: event.get(name) in allowed


def count_within(name: str, condition: Condition, count: int, within_ms: int) -> Pattern:
    """The sliding-window rule "``count`` events satisfying ``condition`` within
    ``within_ms`` of each other" (e.g. three failed logins within a minute): ``A{count}``
    with other events allowed between, first to last ``<= within_ms``.  Each event counts
    in one match at most (skip past last row)."""
    return Pattern.begin(name, condition).times(count).allow_gaps().within(within_ms)


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a key: its event time (epoch ms) and fields (JSON values)."""

    ts: int
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Step:
    """One positive step: ``min_times..max_times`` events (``None``: unbounded) satisfying
    ``condition``, joined to the previous step with ``contiguity`` and to each other with
    ``repeat``; ``forbid`` lists the negations checked in the gap before this step."""

    name: str
    condition: Condition
    contiguity: Contiguity = "strict"
    repeat: Contiguity = "strict"
    min_times: int = 1
    max_times: int | None = 1
    forbid: tuple[Condition, ...] = ()


@dataclass(frozen=True, slots=True)
class Pattern:
    """An immutable pattern; every builder method returns a new one."""

    steps: tuple[Step, ...]
    within_ms: int | None = None
    trailing_forbid: tuple[Condition, ...] = ()
    _pending_forbid: tuple[Condition, ...] = field(default=())

    @staticmethod
    def begin(name: str, condition: Condition) -> Pattern:
        return Pattern((Step(name, condition),))

    def next(self, name: str, condition: Condition) -> Pattern:
        return self._then(Step(name, condition, "strict"))

    def followed_by(self, name: str, condition: Condition) -> Pattern:
        return self._then(Step(name, condition, "relaxed"))

    def _then(self, step: Step) -> Pattern:
        self._check_name(step.name)
        step = replace(step, forbid=self._pending_forbid)
        return replace(self, steps=(*self.steps, step), _pending_forbid=(), trailing_forbid=())

    def not_followed_by(self, condition: Condition) -> Pattern:
        """No event satisfying ``condition`` between the previous step and the next one
        (or, at the end of the pattern, until ``within`` after the first event)."""
        pending = (*self._pending_forbid, condition)
        return replace(self, _pending_forbid=pending, trailing_forbid=pending)

    def times(self, n: int, m: int | None = -1) -> Pattern:
        """``A{n}`` (``m`` omitted), ``A{n,m}``, or ``A{n,}`` (``m=None``)."""
        upper = n if m == -1 else m
        if n < 1 or (upper is not None and upper < n):
            raise ConfigError(f"times({n}, {m}): need 1 <= n <= m")
        last = replace(self.steps[-1], min_times=n, max_times=upper)
        return replace(self, steps=(*self.steps[:-1], last))

    def allow_gaps(self) -> Pattern:
        """Let the last step's repeated events have other events between them (Flink's
        default for ``times``; strict, Flink's ``consecutive()``, is the default here)."""
        last = replace(self.steps[-1], repeat="relaxed")
        return replace(self, steps=(*self.steps[:-1], last))

    def times_or_more(self, n: int) -> Pattern:
        return self.times(n, None)

    def one_or_more(self) -> Pattern:
        return self.times(1, None)

    def within(self, ms: int) -> Pattern:
        if ms < 0:
            raise ConfigError(f"within({ms}): must be >= 0")
        return replace(self, within_ms=ms)

    def _check_name(self, name: str) -> None:
        if any(step.name == name for step in self.steps):
            raise ConfigError(f"pattern step {name!r} named twice")

    def check(self) -> None:
        """Refuse patterns the matcher cannot decide (a trailing negation needs within)."""
        if self.trailing_forbid and self.within_ms is None:
            raise ConfigError("a pattern ending in a negation needs within(...)")
        last = self.steps[-1]
        if last.max_times != last.min_times and not self.trailing_forbid:
            raise ConfigError(f"the last step {last.name!r} needs a fixed count (times(n))")


@dataclass(frozen=True, slots=True)
class Match:
    """A completed match: the events of each step, oldest first."""

    events: Mapping[str, tuple[Event, ...]]

    @property
    def first_ts(self) -> int:
        return min(e.ts for events in self.events.values() for e in events)

    @property
    def last_ts(self) -> int:
        return max(e.ts for events in self.events.values() for e in events)


# A run: (step index, events taken by that step so far, all events as (step, ts, fields),
# flag).  Flags: OPEN; PENDING -- every positive step is done and a trailing negation is
# open; GAPPED -- an event was skipped since the run's last event (a relaxed repetition),
# so a strict ``next`` step can no longer follow directly.
_Run = tuple[int, int, tuple[tuple[int, int, Mapping[str, Any]], ...], int]
OPEN, PENDING, GAPPED = 0, 1, 2


class Matcher:
    """Runs one :class:`Pattern` over one key's events, fed in event-time order."""

    def __init__(self, pattern: Pattern, state: Any = None) -> None:
        pattern.check()
        self.pattern = pattern
        self._runs: list[_Run] = []
        if state is not None:
            self._runs = [
                (int(s), int(c), tuple((int(i), int(t), f) for i, t, f in evs), int(p))
                for s, c, evs, p in state
            ]

    def state(self) -> list[Any]:
        """The open runs as JSON-serializable lists (restore with ``Matcher(p, state)``)."""
        return [[s, c, [list(e) for e in evs], p] for s, c, evs, p in self._runs]

    @property
    def open_runs(self) -> int:
        return len(self._runs)

    def earliest_deadline_ms(self) -> int | None:
        """With ``within``: the earliest ``first ts + within`` of the open runs -- after it
        that run expires (or, pending a trailing negation, matches)."""
        within = self.pattern.within_ms
        if within is None or not self._runs:
            return None
        return min(run[2][0][1] for run in self._runs) + within

    def _expired(self, run: _Run, now_ts: int) -> bool:
        within = self.pattern.within_ms
        return within is not None and now_ts - run[2][0][1] > within

    def advance_to(self, ts: int) -> list[Match]:
        """Event time reached ``ts`` (no event before ``ts`` will come): expire runs and
        emit matches whose trailing negation window ended before ``ts``."""
        matches: list[Match] = []
        kept: list[_Run] = []
        for run in self._runs:
            if self._expired(run, ts):
                if run[3] == PENDING:
                    matches.append(self._match(run))
            else:
                kept.append(run)
        self._runs = kept
        if matches:
            self._skip_past(max(m.last_ts for m in matches))
        return matches

    def feed(self, event: Event) -> list[Match]:
        """Process the next event of the key (ts not below the previous one's)."""
        matches = self.advance_to(event.ts)
        steps = self.pattern.steps
        completed: list[_Run] = []
        runs: list[_Run] = []
        for run in [*self._runs, (0, 0, (), OPEN)]:
            for branch in self._step(run, event, steps):
                if branch[3] == PENDING and not self.pattern.trailing_forbid:
                    completed.append(branch)
                else:
                    runs.append(branch)
        runs = [r for r in runs if r[2] and not self._expired(r, event.ts)]
        completed = [r for r in completed if not self._expired(r, event.ts)]
        self._runs = runs
        if completed:
            best = min(completed, key=lambda r: (r[2][0][1], -len(r[2])))
            matches.append(self._match(best))
            self._skip_past(event.ts)
        return matches

    def _step(self, run: _Run, event: Event, steps: tuple[Step, ...]) -> list[_Run]:
        """The runs ``run`` becomes after ``event``: none (it dies), itself (the event is
        skipped), and/or one that took the event into its step or the next."""
        index, count, events, flag = run
        fields = event.fields
        if flag == PENDING:  # all positive steps done: only the trailing negation is open
            if any(condition(fields) for condition in self.pattern.trailing_forbid):
                return []
            return [run]
        if not events:  # a fresh run: the event may start the first step
            if steps[0].condition(fields):
                return [self._after_take((0, 1, ((0, event.ts, fields),), OPEN), steps)]
            return []
        out: list[_Run] = []
        step = steps[index]
        can_take = step.max_times is None or count < step.max_times
        if can_take and step.condition(fields):
            out.append(
                self._after_take(
                    (index, count + 1, (*events, (index, event.ts, fields)), OPEN), steps
                )
            )
        nxt = steps[index + 1] if index + 1 < len(steps) else None
        waits_next = count >= step.min_times and nxt is not None
        if nxt is not None and waits_next:
            if any(condition(fields) for condition in nxt.forbid):
                return out  # a forbidden event in the gap ends the run (a take may restart it)
            adjacent = flag != GAPPED or nxt.contiguity == "relaxed"
            if adjacent and nxt.condition(fields):
                taken = (index + 1, 1, (*events, (index + 1, event.ts, fields)), OPEN)
                out.append(self._after_take(taken, steps))
        # Skipping the event keeps the run only where relaxed contiguity allows it.
        repeat_relaxed = can_take and step.repeat == "relaxed"
        gap_relaxed = waits_next and nxt is not None and nxt.contiguity == "relaxed"
        if gap_relaxed:
            out.append(run)
        elif repeat_relaxed:
            out.append((index, count, events, GAPPED))
        return out

    def _after_take(self, run: _Run, steps: tuple[Step, ...]) -> _Run:
        index, count, events, _ = run
        last = steps[-1]
        done = index == len(steps) - 1 and count >= last.min_times
        full = last.max_times is not None and count >= last.max_times
        if done and (full or self.pattern.trailing_forbid):
            return (index, count, events, PENDING)
        return run

    def _match(self, run: _Run) -> Match:
        grouped: dict[str, list[Event]] = {step.name: [] for step in self.pattern.steps}
        for index, ts, fields in run[2]:
            grouped[self.pattern.steps[index].name].append(Event(ts, fields))
        return Match({name: tuple(events) for name, events in grouped.items()})

    def _skip_past(self, ts: int) -> None:
        self._runs = [r for r in self._runs if r[2][0][1] > ts]
