"""The scrape-time collector: partition gauges, lag arithmetic, and a loop that never answers."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest

from riverbed.broker.metrics_collector import BrokerStateCollector, ask_loop


@dataclass
class _Log:
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    size_bytes: int


def _text(collector: BrokerStateCollector) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_lag_is_high_watermark_minus_committed_never_negative() -> None:
    logs = {("t", 0): _Log(5, 100, 90, 4096), ("t", 1): _Log(0, 10, 10, 512)}
    committed = {"g": {("t", 0): 60, ("t", 1): 12, ("gone", 0): 3}}
    text = _text(BrokerStateCollector(lambda: logs, lambda: committed))
    assert 'riverbed_partition_high_watermark{partition="0",topic="t"} 100.0' in text
    assert 'riverbed_partition_log_start_offset{partition="0",topic="t"} 5.0' in text
    assert 'riverbed_partition_last_stable_offset{partition="0",topic="t"} 90.0' in text
    assert 'riverbed_partition_log_size_bytes{partition="1",topic="t"} 512.0' in text
    assert 'riverbed_consumer_group_lag{group="g",partition="0",topic="t"} 40.0' in text
    assert 'riverbed_consumer_group_lag{group="g",partition="1",topic="t"} 0.0' in text
    assert 'topic="gone"' not in text  # a deleted topic's offsets are not reported
    assert "riverbed_scrape_state_errors_total 0.0" in text


def test_an_unanswered_state_read_drops_the_group_series_and_counts() -> None:
    collector = BrokerStateCollector(lambda: {}, lambda: None)
    text = _text(collector)
    assert "riverbed_consumer_group_lag{" not in text
    assert "riverbed_scrape_state_errors_total 1.0" in text


def test_ask_loop_runs_on_the_loop_and_gives_up_on_a_busy_one() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        assert ask_loop(loop, threading.get_ident, 30) == thread.ident
        assert ask_loop(loop, lambda: 1 // 0, 30) is None  # raised: no answer
        blocker = threading.Event()
        loop.call_soon_threadsafe(blocker.wait, 30)  # the loop is stuck for a while
        started = time.monotonic()
        assert ask_loop(loop, lambda: 1, 0.2) is None
        assert time.monotonic() - started < 10
        blocker.set()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
    assert ask_loop(loop, lambda: 1, 1) is None  # closed
