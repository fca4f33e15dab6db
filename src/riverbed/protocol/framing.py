"""Request and response framing: size prefix, headers, and dispatch to the message codecs.

On the wire every request and response is ``int32 size`` followed by ``size`` bytes::

    request  = RequestHeader  body       header v1: api_key int16, api_version int16,
                                                    correlation_id int32, client_id STRING
                                         header v2: v1 + TAGGED_FIELDS (flexible versions)
    response = ResponseHeader body       header v0: correlation_id int32
                                         header v1: v0 + TAGGED_FIELDS (flexible versions)

``client_id`` is always a classic (int16-length, nullable) string, even in header v2, so
a broker can read the header of a request whose version it does not understand.
ApiVersions responses always use response header v0 (see :mod:`riverbed.protocol.api`).

:func:`decode_request` raises :class:`~riverbed.errors.DecodeError` for malformed bytes and
:class:`UnsupportedRequestVersionError` (an
:class:`~riverbed.errors.UnsupportedVersionError` carrying the parsed ``header``) for an
unknown API key or version, so the broker can still answer, e.g. with Kafka's ApiVersions
v0 fallback.  Pure functions; safe from any thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from riverbed.errors import DecodeError, UnsupportedVersionError
from riverbed.protocol.api import API_BY_KEY, ApiSpec
from riverbed.protocol.messages.base import Message
from riverbed.protocol.primitives import (
    read_nullable_string,
    read_unknown_tagged_fields,
    write_nullable_string,
)
from riverbed.protocol.scatter import ScatterBuffer

_HEADER_PREFIX = struct.Struct(">hhi")
_INT32 = struct.Struct(">i")
_SIZE_PLACEHOLDER = b"\x00\x00\x00\x00"


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A request's header (v1 or v2; tagged header fields are skipped)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


class UnsupportedRequestVersionError(UnsupportedVersionError):
    """An API key or version we lack; ``header`` is what could be parsed of the request."""

    def __init__(self, message: str, header: RequestHeader) -> None:
        super().__init__(message)
        self.header = header


def _spec_for(header: RequestHeader) -> ApiSpec:
    spec = API_BY_KEY.get(header.api_key)
    if spec is None:
        raise UnsupportedRequestVersionError(f"unknown API key {header.api_key}", header)
    if not spec.supports(header.api_version):
        raise UnsupportedRequestVersionError(
            f"{spec.name} v{header.api_version} is not supported "
            f"(v{spec.min_version}-v{spec.max_version})",
            header,
        )
    return spec


def decode_request(
    frame: bytes | bytearray | memoryview, *, ignore_trailing_bytes: bool = False
) -> tuple[RequestHeader, Message]:
    """Decode one request; ``frame`` is the bytes after the 4-byte size prefix.

    Bytes left over after the body are a :class:`DecodeError`, unless
    ``ignore_trailing_bytes``: Kafka's broker does not check for them
    (``AbstractRequest.parseRequest`` reads the fields it knows and ignores the rest), and
    librdkafka 2.16 sends Metadata v13 with three such bytes, so a broker passes True.
    """
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    if len(buf) < _HEADER_PREFIX.size + 2:
        raise DecodeError(f"request frame of {len(buf)} bytes is too short for a header")
    api_key, api_version, correlation_id = _HEADER_PREFIX.unpack_from(buf, 0)
    try:
        client_id, pos = read_nullable_string(buf, _HEADER_PREFIX.size)
    except (UnicodeDecodeError, IndexError, struct.error) as exc:
        raise DecodeError(f"malformed client_id: {exc}") from exc
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    spec = _spec_for(header)
    if spec.request_header_version(api_version) >= 2:
        try:
            _, pos = read_unknown_tagged_fields(buf, pos)
        except (IndexError, struct.error) as exc:
            raise DecodeError(f"malformed request header tagged fields: {exc}") from exc
    if ignore_trailing_bytes:
        request, _end = spec.request_class.decode_from(buf, pos, api_version)
    else:
        request = spec.request_class.decode(buf[pos:], api_version)
    return header, request


def encode_response(header: RequestHeader, response: Message) -> bytes:
    """The response to ``header``'s request, size prefix included, at the request's version."""
    spec = API_BY_KEY[header.api_key]
    out = bytearray(_SIZE_PLACEHOLDER)
    out += _INT32.pack(header.correlation_id)
    if spec.response_header_version(header.api_version) >= 1:
        out.append(0)  # no tagged fields in the header
    response.encode_into(out, header.api_version)
    _INT32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_response_parts(
    header: RequestHeader, response: Message
) -> list[bytearray | memoryview | bytes]:
    """:func:`encode_response` as buffers to write in order, record payloads not copied.

    Big ``records`` payloads (Fetch) are the very objects the response holds (see
    :mod:`riverbed.protocol.scatter`); their concatenation equals :func:`encode_response`.
    """
    spec = API_BY_KEY[header.api_key]
    out = ScatterBuffer(_SIZE_PLACEHOLDER)
    out += _INT32.pack(header.correlation_id)
    if spec.response_header_version(header.api_version) >= 1:
        out.append(0)  # no tagged fields in the header
    response.encode_into(out, header.api_version)
    _INT32.pack_into(out, 0, out.encoded_size - 4)
    return out.parts()


def encode_request(header: RequestHeader, request: Message) -> bytes:
    """A request (client side), size prefix included, at ``header.api_version``."""
    spec = _spec_for(header)
    out = bytearray(_SIZE_PLACEHOLDER)
    out += _HEADER_PREFIX.pack(header.api_key, header.api_version, header.correlation_id)
    write_nullable_string(out, header.client_id)
    if spec.request_header_version(header.api_version) >= 2:
        out.append(0)
    request.encode_into(out, header.api_version)
    _INT32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def decode_response(
    frame: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> tuple[int, Message]:
    """Decode a response (client side): ``(correlation_id, response)``.

    ``frame`` is the bytes after the size prefix; the caller knows which request it sent.
    """
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    spec = _spec_for(RequestHeader(api_key, api_version, -1))
    if len(buf) < 4:
        raise DecodeError(f"response frame of {len(buf)} bytes is too short for a header")
    (correlation_id,) = _INT32.unpack_from(buf, 0)
    pos = 4
    if spec.response_header_version(api_version) >= 1:
        try:
            _, pos = read_unknown_tagged_fields(buf, pos)
        except (IndexError, struct.error) as exc:
            raise DecodeError(f"malformed response header tagged fields: {exc}") from exc
    return correlation_id, spec.response_class.decode(buf[pos:], api_version)
