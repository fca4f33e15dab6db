"""Request decoding with Kafka's tolerance of trailing bytes (an adapter over the codec).

:func:`riverbed.protocol.framing.decode_request` refuses bytes left over after a request
body.  Kafka's broker does not check for them (``AbstractRequest.parseRequest`` reads the
fields it knows and ignores the rest), and librdkafka 2.16 sends Metadata v13 with three
such bytes, so the broker decodes the body with ``decode_from`` and ignores what follows.
Everything else — header layout, unknown key/version errors carrying the parsed header,
DecodeError for malformed fields — is the codec's.  Pure; safe from any thread.
"""

from __future__ import annotations

import struct

from riverbed.errors import DecodeError
from riverbed.protocol.api import API_BY_KEY
from riverbed.protocol.framing import RequestHeader, UnsupportedRequestVersionError
from riverbed.protocol.messages.base import Message
from riverbed.protocol.primitives import read_nullable_string, read_unknown_tagged_fields

_HEADER_PREFIX = struct.Struct(">hhi")


def decode_request(frame: memoryview) -> tuple[RequestHeader, Message]:
    """Decode one request frame (without its size prefix), ignoring trailing bytes."""
    if len(frame) < _HEADER_PREFIX.size + 2:
        raise DecodeError(f"request frame of {len(frame)} bytes is too short for a header")
    api_key, api_version, correlation_id = _HEADER_PREFIX.unpack_from(frame, 0)
    try:
        client_id, pos = read_nullable_string(frame, _HEADER_PREFIX.size)
    except (UnicodeDecodeError, IndexError, struct.error) as exc:
        raise DecodeError(f"malformed client_id: {exc}") from exc
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    spec = API_BY_KEY.get(api_key)
    if spec is None:
        raise UnsupportedRequestVersionError(f"unknown API key {api_key}", header)
    if not spec.supports(api_version):
        raise UnsupportedRequestVersionError(
            f"{spec.name} v{api_version} is not supported "
            f"(v{spec.min_version}-v{spec.max_version})",
            header,
        )
    if spec.request_header_version(api_version) >= 2:
        try:
            _, pos = read_unknown_tagged_fields(frame, pos)
        except (IndexError, struct.error) as exc:
            raise DecodeError(f"malformed request header tagged fields: {exc}") from exc
    request, _end = spec.request_class.decode_from(frame, pos, api_version)
    return header, request
