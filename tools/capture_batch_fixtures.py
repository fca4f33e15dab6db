"""Capture record batches written by other Kafka implementations as test fixtures.

Writes ``tests/fixtures/batches/<writer>-<codec>.bin`` (a records blob: one or more v2
batches back to back) and ``<writer>-<codec>.json`` (what the blob must decode to) for:

- ``librdkafka``: confluent-kafka's producer (librdkafka) against librdkafka's in-process
  mock cluster (``test.mock.num.brokers: 1``), idempotent, one partition per codec.  The
  mock broker stores produced batches verbatim (it only assigns the base offset, which is
  outside the CRC), so the bytes are fetched back with a raw Fetch v4 request encoded and
  decoded by kafka-python's protocol classes.  ``librdkafka-txn`` is a transactional
  (committed) lz4 batch.  The mock's own COMMIT marker is not captured: the mock writes
  control batches with a zero CRC and zero timestamps, which no real broker does.
- ``kafka-python``: kafka-python's own ``DefaultRecordBatchBuilder`` (the encoder its
  producer uses); snappy only if python-snappy is installed.
- ``aiokafka``: aiokafka's ``DefaultRecordBatchBuilder`` (its C extension when built).

Run from the repository root: ``.venv/bin/python tools/capture_batch_fixtures.py``.
Deterministic content (keys, values, headers, timestamps); the bytes differ from run to
run only where the writer puts producer ids or compressor nondeterminism.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import sys
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "batches"
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TS = 1_700_000_000_000

Headers = list[tuple[str, bytes | None]]
Spec = tuple[bytes | None, bytes | None, Headers, int]


def dataset(codec: str) -> list[Spec]:
    """The records every writer produces: keyed, headers, null key/value, unicode."""
    records: list[Spec] = []
    for i in range(6):
        key: bytes | None = f"key-{i % 4}".encode()
        value: bytes | None = (f"{codec} value {i} " * (4 + i * 3)).encode()
        headers: Headers = [("trace-id", f"t{i:04d}".encode()), ("seq", str(i).encode())]
        if i == 2:
            key = None
        if i == 3:
            value = None  # a tombstone
        if i == 4:
            headers = [("ключ", "значение".encode()), ("null-value", None)]
        if i == 5:
            headers = []
            value = b""
        records.append((key, value, headers, BASE_TS + i * 7 - (3 if i == 1 else 0)))
    return records


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def sidecar(writer: str, codec: str, specs: list[Spec], extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "writer": writer,
        "codec": codec,
        "codec_id": CODECS[codec],
        "records": [
            {
                "timestamp": ts,
                "key_b64": _b64(key),
                "value_b64": _b64(value),
                "headers": [[k, _b64(v)] for k, v in headers],
            }
            for key, value, headers, ts in specs
        ],
        **extra,
    }


def save(name: str, blob: bytes, meta: dict[str, Any]) -> None:
    (OUT / f"{name}.bin").write_bytes(blob)
    (OUT / f"{name}.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    print(f"{name}: {len(blob)} bytes", file=sys.stderr)


# ------------------------------------------------------------------------ librdkafka


def _fetch_records(host: str, port: int, topic: str, offset: int = 0) -> bytes:
    from kafka.protocol.old.fetch import FetchRequest_v4, FetchResponse_v4

    request = FetchRequest_v4(
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        topics=[(topic, [(0, offset, 1 << 20)])],
    )
    request.with_header(correlation_id=1, client_id="riverbed-capture")
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(request.encode(header=True, framed=True))
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        payload = BytesIO(_recv_exact(sock, size))
    payload.read(4)  # response header v0: correlation id
    response = FetchResponse_v4.decode(payload)
    [(_topic, partitions)] = response.topics
    [(_partition, error_code, _hw, _lso, _aborted, records)] = partitions
    if error_code:
        raise RuntimeError(f"fetch {topic} failed: error {error_code}")
    return bytes(records)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return bytes(buf)


def _produce(producer: Any, topic: str, specs: list[Spec]) -> None:
    for key, value, headers, ts in specs:
        producer.produce(topic, value=value, key=key, headers=headers, timestamp=ts, partition=0)


def capture_librdkafka() -> Iterator[tuple[str, bytes, dict[str, Any]]]:
    import confluent_kafka

    conf = {
        "test.mock.num.brokers": 1,
        "linger.ms": 200,
        "enable.idempotence": True,
    }
    version = {
        "library": f"confluent-kafka {confluent_kafka.version()[0]}, "
        f"librdkafka {confluent_kafka.libversion()[0]}"
    }
    for codec in CODECS:
        producer = confluent_kafka.Producer({**conf, "compression.type": codec})
        topic = f"capture-{codec}"
        specs = dataset(codec)
        _produce(producer, topic, specs)
        if producer.flush(10) != 0:
            raise RuntimeError("librdkafka did not deliver")
        [broker] = producer.list_topics(timeout=5).brokers.values()
        blob = _fetch_records(broker.host, broker.port, topic)
        yield f"librdkafka-{codec}", blob, sidecar("librdkafka", codec, specs, version)
        del producer
    producer = confluent_kafka.Producer(
        {**conf, "compression.type": "lz4", "transactional.id": "riverbed-capture"}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    specs = dataset("lz4")[:3]
    _produce(producer, "capture-txn", specs)
    producer.commit_transaction(10)
    [broker] = producer.list_topics(timeout=5).brokers.values()
    blob = _fetch_records(broker.host, broker.port, "capture-txn")
    meta = sidecar("librdkafka", "lz4", specs, {**version, "transactional": True})
    yield "librdkafka-txn", blob, meta


# -------------------------------------------------------------- kafka-python / aiokafka


def _build_with(builder_cls: Any, codec: str, specs: list[Spec]) -> bytes:
    builder = builder_cls(
        magic=2,
        compression_type=CODECS[codec],
        is_transactional=False,
        producer_id=4242,
        producer_epoch=3,
        base_sequence=17,
        batch_size=1 << 20,
    )
    for offset, (key, value, headers, ts) in enumerate(specs):
        builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def capture_kafka_python() -> Iterator[tuple[str, bytes, dict[str, Any]]]:
    import kafka
    import kafka.codec
    from kafka.record.default_records import DefaultRecordBatchBuilder

    for codec in CODECS:
        if codec == "snappy" and not kafka.codec.has_snappy():
            print("kafka-python: snappy skipped (python-snappy not installed)", file=sys.stderr)
            continue
        specs = dataset(codec)
        blob = _build_with(DefaultRecordBatchBuilder, codec, specs)
        meta = sidecar(
            "kafka-python", codec, specs, {"library": f"kafka-python {kafka.__version__}"}
        )
        yield f"kafka-python-{codec}", blob, meta


def capture_aiokafka() -> Iterator[tuple[str, bytes, dict[str, Any]]]:
    import aiokafka
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    for codec in CODECS:
        specs = dataset(codec)
        blob = _build_with(DefaultRecordBatchBuilder, codec, specs)
        meta = sidecar("aiokafka", codec, specs, {"library": f"aiokafka {aiokafka.__version__}"})
        yield f"aiokafka-{codec}", blob, meta


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for capture in (capture_librdkafka, capture_kafka_python, capture_aiokafka):
        for name, blob, meta in capture():
            save(name, blob, meta)


if __name__ == "__main__":
    main()
