"""The ``clock-skew`` example on local Spark against a ``riverbed broker`` process.

Devices whose clocks are off by -3 min to +2 h send events that arrive up to 10 min (less
1 s) out of order on the server's clock.  Stream = batch: two ``availableNow`` runs on
one checkpoint (a restart in between) give exactly the per-device counts of the
corrected times (``event_ts + receive_ts - send_ts``, computed in plain Python) for the
windows the watermark closed; every event lands in the window of its true time (the
network delay, under 0.5 s, moves none across a window edge here).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Producer

import riverbed.pipelines.clock_skew_example as example
from riverbed.testing.broker_process import BrokerProcess

from .conftest import RunExample, create_topics, drain
from .contract import DELAY_MS, MINUTE_MS, T0

pytestmark = [pytest.mark.time_examples, pytest.mark.timeout(900)]  # two Spark runs

WINDOW_MS = 5 * MINUTE_MS
SKEW_MS = {"d0": 0, "d1": -3 * MINUTE_MS, "d2": 7 * MINUTE_MS + 123, "d3": 2 * 60 * MINUTE_MS}


def _events(rng: random.Random, count: int) -> list[tuple[int, dict[str, Any]]]:
    """``(true server time, record)``; true times off window edges by more than 1 s."""
    out = []
    for _ in range(count):
        device = rng.choice(sorted(SKEW_MS))
        true = T0 + rng.randrange(60 * MINUTE_MS)
        if true % WINDOW_MS < 1000 or true % WINDOW_MS > WINDOW_MS - 1000:
            true += 2000
        buffered = rng.randrange(60_000)  # device-side wait before sending
        network = rng.randrange(500)
        event_ts = true - SKEW_MS[device]
        record = {
            "device_id": device,
            "event_ts": event_ts,
            "send_ts": event_ts + buffered,
            "receive_ts": true + buffered + network,
        }
        out.append((true, record))
    return out


def _expected(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    corrected = [(r["device_id"], r["event_ts"] + r["receive_ts"] - r["send_ts"]) for r in records]
    watermark = max(ts for _, ts in corrected) - DELAY_MS
    counts = Counter((d, ts - ts % WINDOW_MS) for d, ts in corrected)
    return [
        {"device_id": d, "window_start": s, "window_end": s + WINDOW_MS, "events": n}
        for (d, s), n in sorted(counts.items())
        if s + WINDOW_MS <= watermark
    ]


def _produce(bootstrap: str, records: list[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for record in records:
        producer.produce(example.INPUT_TOPIC, key=record["device_id"], value=json.dumps(record))
    assert producer.flush(60) == 0


def _counts(bootstrap: str) -> list[dict[str, Any]]:
    out = drain(bootstrap, example.OUTPUT_TOPIC)
    assert all(key == value["device_id"].encode() for key, value in out)
    return sorted((v for _, v in out), key=lambda v: (v["device_id"], v["window_start"]))


def test_corrected_windows_stream_equals_batch_with_restart(
    broker: BrokerProcess, run_example: RunExample
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, [example.INPUT_TOPIC, example.OUTPUT_TOPIC])
    rng = random.Random(3)
    events = _events(rng, 300)
    # arrival order: true time plus a random delay under 10 min - 1 s
    keyed = sorted((true + rng.randrange(DELAY_MS - 1000), i) for i, (true, _) in enumerate(events))
    arrivals = [events[i][1] for _, i in keyed]
    half = len(arrivals) // 2
    _produce(bootstrap, arrivals[:half])
    run_example(example, bootstrap, extra_source_options=(("maxOffsetsPerTrigger", "50"),))
    assert _counts(bootstrap) == _expected(arrivals[:half])
    _produce(bootstrap, arrivals[half:])
    run_example(example, bootstrap)
    expected = _expected(arrivals)
    assert len(expected) > 30
    assert _counts(bootstrap) == expected
    # the corrected windows are the true times' windows
    truth = Counter((r["device_id"], t - t % WINDOW_MS) for t, r in events)
    for window in expected:
        assert truth[(window["device_id"], window["window_start"])] == window["events"]
