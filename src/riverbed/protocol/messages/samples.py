"""Sample messages built from the schema metadata (``FIELDS``), for tests and tools.

:func:`random_message` fills every field a version carries with pseudo-random values
from a :class:`random.Random` (deterministic for a seed); :func:`message_strategy` does
the same as a Hypothesis strategy (Hypothesis is imported lazily: it is a dev
dependency).  Both respect each field's versions, nullable versions and tagged
versions, and in flexible versions add unknown tagged fields (tags >= 1000) so the
"keep and re-encode" path is exercised.  Fields a version lacks keep their defaults, so
``decode(encode(m, v), v) == m`` holds for every sample.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from riverbed.protocol.messages.base import FieldSpec, Message, Struct, in_range

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


class Draw(Protocol):
    """The few random choices a sample needs (backed by ``random`` or Hypothesis)."""

    def integer(self, low: int, high: int) -> int: ...
    def boolean(self) -> bool: ...
    def floating(self) -> float: ...
    def text(self) -> str: ...
    def binary(self) -> bytes: ...


class RandomDraw:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        if self.rng.random() < 0.3:
            return self.rng.choice((low, high, 0 if low <= 0 <= high else low))
        return self.rng.randint(low, high)

    def boolean(self) -> bool:
        return self.rng.random() < 0.5

    def floating(self) -> float:
        return self.rng.uniform(-1e9, 1e9)

    def text(self) -> str:
        return "".join(self.rng.choice("abcXYZ-_.é☃𝄞") for _ in range(self.rng.randint(0, 8)))

    def binary(self) -> bytes:
        return self.rng.randbytes(self.rng.randint(0, 16))


def build(draw: Draw, cls: type[Struct], owner: type[Message], version: int) -> Any:
    """An instance of ``cls`` (``owner`` or one of its nested structs) valid for ``version``."""
    flexible = owner.is_flexible(version)
    kwargs: dict[str, Any] = {}
    for spec in cls.FIELDS:
        if in_range(version, spec.versions):
            kwargs[spec.name] = _value(draw, spec, owner, version)
    if flexible and draw.boolean() and draw.boolean():
        count = draw.integer(1, 2)
        kwargs["_unknown_tagged_fields"] = [(1000 + i, draw.binary()) for i in range(count)]
    return cls(**kwargs)


def _value(draw: Draw, spec: FieldSpec, owner: type[Message], version: int) -> Any:
    nullable = in_range(version, spec.nullable_versions)
    if nullable and draw.integer(0, 4) == 0:
        return None
    if spec.type.startswith("[]"):
        element = spec.type[2:]
        return [_scalar(draw, element, spec, owner, version) for _ in range(draw.integer(0, 3))]
    return _scalar(draw, spec.type, spec, owner, version)


def _scalar(draw: Draw, type_: str, spec: FieldSpec, owner: type[Message], version: int) -> Any:
    if type_ in _INT_RANGES:
        return draw.integer(*_INT_RANGES[type_])
    simple: dict[str, Callable[[], Any]] = {
        "bool": draw.boolean,
        "float64": draw.floating,
        "string": draw.text,
        "bytes": draw.binary,
        "records": draw.binary,
        "uuid": lambda: uuid.UUID(int=draw.integer(0, 2**128 - 1)),
    }
    if type_ in simple:
        return simple[type_]()
    assert type_ == "struct" and spec.struct is not None
    return build(draw, getattr(owner, spec.struct), owner, version)


def random_message(cls: type[Message], version: int, seed: int = 0) -> Message:
    """A deterministic pseudo-random ``cls`` instance for ``version``."""
    result: Message = build(RandomDraw(random.Random(seed)), cls, cls, version)
    return result


def message_strategy(cls: type[Message], version: int) -> Any:
    """A Hypothesis strategy of ``cls`` instances valid for ``version``."""
    from hypothesis import strategies as st

    class HypothesisDraw:
        def __init__(self, data: Any) -> None:
            self.data = data

        def integer(self, low: int, high: int) -> int:
            value: int = self.data.draw(st.integers(low, high))
            return value

        def boolean(self) -> bool:
            value: bool = self.data.draw(st.booleans())
            return value

        def floating(self) -> float:
            value: float = self.data.draw(st.floats(allow_nan=False))
            return value

        def text(self) -> str:
            value: str = self.data.draw(st.text(max_size=12))
            return value

        def binary(self) -> bytes:
            value: bytes = self.data.draw(st.binary(max_size=24))
            return value

    @st.composite
    def strategy(draw: Any) -> Message:
        result: Message = build(HypothesisDraw(_Drawer(draw)), cls, cls, version)
        return result

    return strategy()


class _Drawer:
    """Adapts a ``@composite`` ``draw`` callable to ``data.draw``."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self.draw = draw
