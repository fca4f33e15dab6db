"""Topic regular expressions of KIP-848 subscriptions (ConsumerGroupHeartbeat v1+
``SubscribedTopicRegex``), with Kafka's semantics.

Kafka compiles the pattern with RE2/J (``com.google.re2j.Pattern``) and a topic matches
when the *whole* name matches (``Matcher.matches()``).  We use RE2 itself (the
``google-re2`` wheel), so the syntax is the same: no backreferences, lookarounds or
possessive quantifiers (such a pattern is refused with INVALID_REGULAR_EXPRESSION, as in
Kafka), linear-time matching whatever the pattern.  Internal topics are matched too, as
Kafka 4 does.  Compiled patterns are cached (bounded); every function is thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]

from riverbed.coordinator.errors import GroupCoordinatorError
from riverbed.protocol.error_codes import ErrorCode

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a client's bad pattern is its error, not the broker's log


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> Any:
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise GroupCoordinatorError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {detail}.",
        ) from exc


def validate(pattern: str) -> None:
    """Raise :class:`GroupCoordinatorError` (INVALID_REGULAR_EXPRESSION) unless ``pattern``
    compiles under RE2."""
    _compile(pattern)


def matching(pattern: str, topics: Iterable[str]) -> set[str]:
    """The ``topics`` whose whole name ``pattern`` matches."""
    compiled = _compile(pattern)
    return {t for t in topics if compiled.fullmatch(t) is not None}
