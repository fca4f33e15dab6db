"""Raw Kafka requests over a plain socket, for bad inputs that real clients refuse to send.

Clients validate acks, partitions and sizes before anything reaches the broker, so the
error codes a broker must answer with are observed here with kafka-python's JSON-schema
generated message classes (``kafka.protocol.*``) on a blocking socket: one request in
flight, explicit versions, no retries.  Every function returns Kafka's error name(s).
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from riverbed.protocol.error_codes import ErrorCode

CLIENT_ID = "riverbed-compat-raw"


class RawConnection:
    """One TCP connection; :meth:`request` sends a request and decodes its response."""

    def __init__(self, bootstrap: str, timeout_s: float = 15.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self._sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._correlation_id = 0

    def request(self, req: Any, version: int) -> Any:
        self._correlation_id += 1
        req.with_header(correlation_id=self._correlation_id, client_id=CLIENT_ID)
        self._sock.sendall(req.encode(version=version, header=True, framed=True))
        (size,) = struct.unpack(">i", self._recv(4))
        response_class = req.header.get_response_class()
        return response_class.decode(self._recv(size), version=version, header=True)

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN({code})"


def record_batch(value: bytes = b"v", key: bytes | None = b"k", timestamp_ms: int = 0) -> bytes:
    """One valid uncompressed magic-2 batch with one record."""
    from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=len(value) + 1024)
    builder.append(timestamp=timestamp_ms, key=key, value=value, headers=[])
    builder.close()
    return bytes(builder.buffer())


def produce_error(
    bootstrap: str,
    topic: str,
    partition: int,
    *,
    acks: int = -1,
    records: bytes | None = None,
    version: int = 9,
) -> str:
    """Produce one batch and return the partition's error name (``"NONE"`` on success).

    Transient leadership errors right after topic creation are retried for up to 10 s, as
    a client would; every other answer is returned as is.
    """
    deadline = time.monotonic() + 10.0
    while True:
        error = _produce_once(bootstrap, topic, partition, acks, records, version)
        if error not in _TRANSIENT or time.monotonic() > deadline:
            return error
        time.sleep(0.05)


_TRANSIENT = frozenset({"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE"})


def _produce_once(
    bootstrap: str, topic: str, partition: int, acks: int, records: bytes | None, version: int
) -> str:
    from kafka.protocol.producer import ProduceRequest

    data = ProduceRequest.TopicProduceData
    req = ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            data(
                name=topic,
                partition_data=[
                    data.PartitionProduceData(
                        index=partition,
                        records=records if records is not None else record_batch(),
                    )
                ],
            )
        ],
    )
    with RawConnection(bootstrap) as conn:
        resp = conn.request(req, version)
    [topic_resp] = resp.responses
    [part] = topic_resp.partition_responses
    return _name(part.error_code)


def fetch_error(bootstrap: str, topic: str, partition: int, offset: int, version: int = 11) -> str:
    """Fetch ``offset`` and return the partition's error name."""
    from kafka.protocol.consumer.fetch import FetchRequest

    ftopic = FetchRequest.FetchTopic
    req = FetchRequest(
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            ftopic(
                topic=topic,
                partitions=[
                    ftopic.FetchPartition(
                        partition=partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    with RawConnection(bootstrap) as conn:
        resp = conn.request(req, version)
    [topic_resp] = resp.responses
    [part] = topic_resp.partitions
    return _name(part.error_code)


def fetch_codecs(bootstrap: str, topic: str, partition: int, version: int = 11) -> list[int]:
    """Codec ids (attributes & 7) of the batches a fetch from offset 0 returns, in order."""
    from kafka.protocol.consumer.fetch import FetchRequest

    from riverbed.protocol.batch import BatchHeader, iter_batches

    ftopic = FetchRequest.FetchTopic
    req = FetchRequest(
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=8 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            ftopic(
                topic=topic,
                partitions=[
                    ftopic.FetchPartition(
                        partition=partition,
                        current_leader_epoch=-1,
                        fetch_offset=0,
                        log_start_offset=-1,
                        partition_max_bytes=8 << 20,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    with RawConnection(bootstrap) as conn:
        resp = conn.request(req, version)
    [topic_resp] = resp.responses
    [part] = topic_resp.partitions
    records = part.records
    raw = bytes(records if isinstance(records, (bytes, bytearray, memoryview)) else b"")
    headers: list[BatchHeader] = [h for _, h in iter_batches(raw)]
    return [h.compression for h in headers]


def metadata_errors(
    bootstrap: str,
    topics: list[str],
    *,
    allow_auto_topic_creation: bool = False,
    version: int = 12,
) -> dict[str, str]:
    """Metadata for ``topics``: each topic's error name as the broker answered it."""
    from kafka.protocol.metadata import MetadataRequest

    req = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=t) for t in topics],
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    with RawConnection(bootstrap) as conn:
        resp = conn.request(req, version)
    return {t.name: _name(t.error_code) for t in resp.topics}


def list_offsets(
    bootstrap: str, topic: str, partition: int, timestamp: int, version: int = 7
) -> tuple[str, int, int]:
    """ListOffsets one partition: ``(error name, offset, timestamp)``."""
    from kafka.protocol.consumer import ListOffsetsRequest

    t = ListOffsetsRequest.ListOffsetsTopic
    req = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            t(
                name=topic,
                partitions=[
                    t.ListOffsetsPartition(
                        partition_index=partition,
                        current_leader_epoch=-1,
                        timestamp=timestamp,
                    )
                ],
            )
        ],
    )
    with RawConnection(bootstrap) as conn:
        resp = conn.request(req, version)
    [topic_resp] = resp.topics
    [part] = topic_resp.partitions
    return _name(part.error_code), part.offset, part.timestamp


def corrupt_batch() -> bytes:
    """A batch whose CRC no longer matches (one payload byte flipped)."""
    batch = bytearray(record_batch(b"payload"))
    batch[-2] ^= 0xFF
    return bytes(batch)


def bad_inputs(bootstrap: str, topic: str) -> dict[str, object]:
    """Every bad request this module knows, against an existing 1-partition ``topic``.

    Keys name the case; values are what the broker answered (error names, offsets).  The
    compat suite runs this against Kafka and Riverbed and diffs the two.
    """
    missing = topic + "-missing"
    return {
        "produce_ok": produce_error(bootstrap, topic, 0),
        "produce_acks_2": produce_error(bootstrap, topic, 0, acks=2),
        "produce_unknown_partition": produce_error(bootstrap, topic, 7),
        "produce_unknown_topic_acks_2": produce_error(bootstrap, missing, 0, acks=2),
        "produce_invalid_name": produce_error(bootstrap, "bad name!", 0),
        "produce_corrupt_crc": produce_error(bootstrap, topic, 0, records=corrupt_batch()),
        "produce_empty_records": produce_error(bootstrap, topic, 0, records=b""),
        "fetch_out_of_range": fetch_error(bootstrap, topic, 0, 1000),
        "fetch_negative_offset": fetch_error(bootstrap, topic, 0, -5),
        "fetch_at_end": fetch_error(bootstrap, topic, 0, 1),
        "fetch_unknown_partition": fetch_error(bootstrap, topic, 7, 0),
        "fetch_unknown_topic": fetch_error(bootstrap, missing, 0, 0),
        "metadata": metadata_errors(bootstrap, [topic, missing, "bad name!", "a" * 250]),
        "list_offsets_latest": list_offsets(bootstrap, topic, 0, -1),
        "list_offsets_earliest": list_offsets(bootstrap, topic, 0, -2),
        "list_offsets_max_timestamp": list_offsets(bootstrap, topic, 0, -3),
        "list_offsets_future": list_offsets(bootstrap, topic, 0, 1 << 50),
        "list_offsets_unknown_partition": list_offsets(bootstrap, topic, 7, -1),
        "list_offsets_unknown_topic": list_offsets(bootstrap, missing, 0, -1),
    }
