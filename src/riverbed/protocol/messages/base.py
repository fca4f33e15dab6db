"""Base classes of the generated message classes, and the field metadata they carry.

Every class in :mod:`riverbed.protocol.messages.generated` derives from :class:`Struct`
(nested structs) or :class:`Message` (top-level requests, responses, headers and "data"
types such as ``ConsumerProtocolSubscription``).  The generated code supplies, per class:

* ``__slots__`` with one snake_case attribute per schema field, plus
  ``_unknown_tagged_fields`` (raw ``(tag, payload)`` pairs we did not recognise, re-encoded
  verbatim, or None);
* ``FIELDS``: a tuple of :class:`FieldSpec`, the schema metadata the tests derive their
  Hypothesis strategies from;
* for messages, ``_DECODERS`` / ``_ENCODERS``: one straight-line function per version
  (versions with the same wire layout share one function).

Objects are plain mutable values with no locks: build one per request/response and do not
share it between threads while encoding.  Decoding never mutates its input; ``records``
fields are zero-copy ``memoryview`` slices of the decoded buffer, so the buffer stays
alive as long as the message does.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, Self

from riverbed.errors import DecodeError, UnsupportedVersionError

VersionRange = tuple[int, int]
"""Inclusive ``(low, high)`` version range; ``high`` is 32767 for an open range ("3+")."""

OPEN_END = 0x7FFF

new_instance: Callable[[type[Any]], Any] = object.__new__
"""``object.__new__``: the generated decoders fill slots directly, skipping ``__init__``."""

UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()
"""Constructor default for list and struct fields: replaced by a fresh schema default, so
an explicit ``None`` (a null array or struct) stays None."""

_DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError, MemoryError)


class FieldSpec(NamedTuple):
    """One schema field, as the generator saw it (used by tests and tools, not by codecs).

    ``type`` is the schema type with struct names replaced: ``"int32"``, ``"string"``,
    ``"[]int32"``, ``"struct"``, ``"[]struct"``, … ; ``struct`` then names the nested class
    (an attribute of the top-level message class).
    """

    name: str
    type: str
    versions: VersionRange
    nullable_versions: VersionRange | None
    tag: int | None
    tagged_versions: VersionRange | None
    flexible_versions: VersionRange | None
    struct: str | None


def in_range(version: int, versions: VersionRange | None) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


class Struct:
    """A value made of schema fields; equality and repr go over ``__slots__``."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = ()

    def _values(self) -> tuple[object, ...]:
        slots: tuple[str, ...] = self.__slots__
        return tuple(getattr(self, name) for name in slots)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Struct)
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        slots: tuple[str, ...] = self.__slots__
        parts = [
            f"{name}={getattr(self, name)!r}"
            for name in slots
            if name != "_unknown_tagged_fields" or getattr(self, name)
        ]
        return f"{type(self).__qualname__}({', '.join(parts)})"


Decoder = Callable[[memoryview, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray], None]


class Message(Struct):
    """A top-level schema: a request, a response, a header or a "data" type."""

    __slots__ = ()
    NAME: ClassVar[str] = ""
    MESSAGE_TYPE: ClassVar[str] = ""  # "request", "response", "header" or "data"
    API_KEY: ClassVar[int] = -1
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    FLEXIBLE_MIN_VERSION: ClassVar[int | None] = None
    _DECODERS: ClassVar[dict[int, Decoder]] = {}
    _ENCODERS: ClassVar[dict[int, Encoder]] = {}

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        """Whether ``version`` uses compact strings/arrays and tagged fields."""
        return cls.FLEXIBLE_MIN_VERSION is not None and version >= cls.FLEXIBLE_MIN_VERSION

    @classmethod
    def decode(cls, buf: bytes | bytearray | memoryview, version: int) -> Self:
        """Decode exactly ``buf`` (no trailing bytes allowed) as ``version``.

        Raises :class:`UnsupportedVersionError` for a version this class lacks and
        :class:`DecodeError` for anything malformed — and nothing else.
        """
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        obj, pos = cls.decode_from(mv, 0, version)
        if pos != len(mv):
            raise DecodeError(f"{len(mv) - pos} trailing bytes after {cls.NAME} v{version}")
        return obj

    @classmethod
    def decode_from(cls, buf: memoryview, pos: int, version: int) -> tuple[Self, int]:
        """Decode one message starting at ``pos``; returns it and the offset after it."""
        decoder = cls._DECODERS.get(version)
        if decoder is None:
            raise UnsupportedVersionError(f"{cls.NAME} has no version {version}")
        if buf.format != "B" or buf.ndim != 1:
            buf = buf.cast("B")
        try:
            obj, end = decoder(buf, pos)
        except _DECODE_FAILURES as exc:
            raise DecodeError(f"malformed {cls.NAME} v{version}: {exc}") from exc
        return obj, end

    def encode(self, version: int) -> bytes:
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append this message, encoded as ``version``, to ``out``."""
        encoder = self._ENCODERS.get(version)
        if encoder is None:
            raise UnsupportedVersionError(f"{self.NAME} has no version {version}")
        encoder(self, out)
