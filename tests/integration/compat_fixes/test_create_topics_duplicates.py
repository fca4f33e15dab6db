"""A CreateTopics listing a name twice (kafka-go's ``TestConnCreateTopics``, issue 16): the
duplicated name is not created and is answered once, INVALID_REQUEST "Duplicate topic
name.", the other topics are created.  Same raw request to Kafka and Riverbed."""

from __future__ import annotations

import socket
import struct
import uuid
from typing import Any

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader, decode_response, encode_request
from riverbed.protocol.messages import CreateTopicsRequest, MetadataRequest

CREATE_TOPICS, METADATA = 19, 3


def _call(bootstrap: str, api_key: int, version: int, request: Any) -> Any:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(encode_request(RequestHeader(api_key, version, 3, "dups"), request))
        size = struct.unpack(">i", _exactly(sock, 4))[0]
        return decode_response(_exactly(sock, size), api_key, version)[1]


def _exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by broker")
        buf += chunk
    return bytes(buf)


def _topic(name: str) -> CreateTopicsRequest.CreatableTopic:
    return CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[]
    )


def test_a_duplicated_name_is_invalid_request_and_the_rest_are_created(server: Any) -> None:
    bootstrap = server.bootstrap_servers
    single, twice = f"dup-single-{uuid.uuid4().hex[:8]}", f"dup-twice-{uuid.uuid4().hex[:8]}"
    request = CreateTopicsRequest(
        topics=[_topic(single), _topic(twice), _topic(twice)], timeout_ms=30_000
    )
    response = _call(bootstrap, CREATE_TOPICS, 5, request)
    answered = sorted((t.name, t.error_code, t.error_message) for t in response.topics)
    assert answered == sorted(
        [
            (single, ErrorCode.NONE, None),
            (twice, ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ]
    )
    metadata = _call(
        bootstrap,
        METADATA,
        9,
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=twice)],
            allow_auto_topic_creation=False,
        ),
    )
    assert metadata.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
