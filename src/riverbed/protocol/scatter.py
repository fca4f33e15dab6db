"""Scatter encoding: a message whose big ``records`` payloads are not copied into it.

The generated encoders write a ``records`` field through :func:`write_records` (classic:
``int32`` length) or :func:`write_compact_records` (flexible: ``uvarint`` length + 1); a
null field is written as length -1 / 0 as before.  Into a plain :class:`bytearray` both
append the payload, so the output is byte-for-byte what ``write_nullable_bytes`` made.
Into a :class:`ScatterBuffer` a payload of :data:`SPLICE_MIN_BYTES` or more is *spliced*:
only its length prefix is written and the payload object is remembered with its
position, and :meth:`ScatterBuffer.parts` later returns the message as a list of buffers
-- small slices of the buffer interleaved with the payloads themselves -- whose
concatenation is exactly the plain encoding.  A transport's ``writelines`` (uvloop:
one ``writev``) then sends the record bytes read from the log without copying them
again on the event loop.

Invariants: the payload objects must not change until the parts are written (the log's
reads return fresh immutable ``bytes``); once :meth:`ScatterBuffer.parts` is called the
buffer is exported to memoryviews and can no longer grow.  Pure, no I/O; a buffer
belongs to one thread at a time.
"""

from __future__ import annotations

import struct

from riverbed.protocol.primitives import write_uvarint

Payload = bytes | memoryview
"""A ``records`` value as the codec holds it."""

SPLICE_MIN_BYTES = 2048
"""Payloads at least this long are spliced; shorter ones are cheaper to copy."""

_INT32 = struct.Struct(">i")
_NULL_INT32 = b"\xff\xff\xff\xff"


class ScatterBuffer(bytearray):
    """A bytearray that keeps big ``records`` payloads out of line (module docstring)."""

    __slots__ = ("_spliced_bytes", "_splices")

    def __init__(self, initial: bytes = b"") -> None:
        super().__init__(initial)
        self._splices: list[tuple[int, Payload]] = []
        self._spliced_bytes = 0

    def splice(self, payload: Payload) -> None:
        """Put ``payload`` here, at the current end, without copying it."""
        self._splices.append((len(self), payload))
        self._spliced_bytes += len(payload)

    @property
    def encoded_size(self) -> int:
        """Bytes of the whole encoding: the buffer's own plus the spliced payloads."""
        return len(self) + self._spliced_bytes

    def parts(self) -> list[bytearray | memoryview | bytes]:
        """The encoding as buffers to write in order (just ``[self]`` without splices)."""
        if not self._splices:
            return [self]
        view = memoryview(self)
        out: list[bytearray | memoryview | bytes] = []
        start = 0
        for position, payload in self._splices:
            if position > start:
                out.append(view[start:position])
            out.append(payload)
            start = position
        if start < len(view):
            out.append(view[start:])
        return out


def _append_payload(out: bytearray, value: Payload) -> None:
    if type(out) is ScatterBuffer and len(value) >= SPLICE_MIN_BYTES:
        out.splice(value)
    else:
        out += value


def write_records(out: bytearray, value: Payload | None) -> None:
    """A classic ``records`` field: ``int32`` length (-1 for null) and the payload."""
    if value is None:
        out += _NULL_INT32
        return
    out += _INT32.pack(len(value))
    _append_payload(out, value)


def write_compact_records(out: bytearray, value: Payload | None) -> None:
    """A flexible ``records`` field: ``uvarint`` length + 1 (0 for null) and the payload."""
    if value is None:
        out.append(0)
        return
    write_uvarint(out, len(value) + 1)
    _append_payload(out, value)
