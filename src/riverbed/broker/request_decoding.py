"""The broker's request decoding: the codec's, with Kafka's tolerance of trailing bytes.

Kafka's broker does not check for bytes left over after a request body
(``AbstractRequest.parseRequest`` reads the fields it knows and ignores the rest), and
librdkafka 2.16 sends Metadata v13 with three such bytes, so the broker decodes with
:func:`riverbed.protocol.framing.decode_request` and ``ignore_trailing_bytes=True``.
Everything else (header layout, unknown key/version errors carrying the parsed header,
DecodeError for malformed fields) is the codec's.  Pure; safe from any thread.
"""

from __future__ import annotations

from riverbed.protocol import framing
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages.base import Message


def decode_request(frame: memoryview) -> tuple[RequestHeader, Message]:
    """Decode one request frame (without its size prefix), ignoring trailing bytes."""
    return framing.decode_request(frame, ignore_trailing_bytes=True)
