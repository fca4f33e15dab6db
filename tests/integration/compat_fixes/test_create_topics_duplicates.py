"""A CreateTopics listing a name twice (kafka-go's ``TestConnCreateTopics``, issue 16): the
duplicated name is not created and is answered once, INVALID_REQUEST "Duplicate topic
name.", the other topics are created.  Same raw request to Kafka and Riverbed."""

from __future__ import annotations

import uuid
from typing import Any

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreateTopicsRequest, MetadataRequest
from riverbed.testing.wire import WireClient

CREATE_TOPICS, METADATA = 19, 3


def _call(bootstrap: str, api_key: int, version: int, request: Any) -> Any:
    """``request``'s response on a connection of its own."""
    with WireClient(bootstrap, 60, client_id="dups") as wire:
        return wire.call(api_key, version, request)


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
