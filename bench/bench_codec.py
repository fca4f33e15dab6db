"""Codec speed: decode/encode ops/s for a Produce request (v9, 10 partitions) and a Fetch
response (v12, 10 partitions), 1 KiB of record bytes per partition.

    .venv/bin/python bench/bench_codec.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from riverbed.protocol.messages import FetchResponse, ProduceRequest

RECORDS = bytes(1024)


def produce_request() -> ProduceRequest:
    partitions = [ProduceRequest.PartitionProduceData(index=i, records=RECORDS) for i in range(10)]
    return ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[ProduceRequest.TopicProduceData(name="bench", partition_data=partitions)],
    )


def fetch_response() -> FetchResponse:
    partitions = [
        FetchResponse.PartitionData(
            partition_index=i, high_watermark=1000, last_stable_offset=1000, records=RECORDS
        )
        for i in range(10)
    ]
    return FetchResponse(
        responses=[FetchResponse.FetchableTopicResponse(topic="bench", partitions=partitions)]
    )


def rate(fn: Callable[[], object], seconds: float) -> float:
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(200):
            fn()
        n += 200
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    cases = [
        ("ProduceRequest v9 (10 partitions)", ProduceRequest, produce_request(), 9),
        ("FetchResponse v12 (10 partitions)", FetchResponse, fetch_response(), 12),
    ]
    for label, cls, msg, version in cases:
        data = msg.encode(version)
        decode = rate(lambda c=cls, d=data, v=version: c.decode(d, v), args.seconds)
        encode = rate(lambda m=msg, v=version: m.encode(v), args.seconds)
        print(f"{label}: {len(data)} B  decode {decode:,.0f} ops/s  encode {encode:,.0f} ops/s")


if __name__ == "__main__":
    main()
