"""A full disk, for real: a ``riverbed broker`` process on a 4 MiB tmpfs (issue 15.9).

Produce answers KAFKA_STORAGE_ERROR with a message naming the errno and the file; SIGTERM
then stops the broker with one ERROR line (what is full, how much is free, which
partitions could not be closed cleanly) and exit code 3, no traceback; and after the file
system is grown, every acknowledged record is there.  Needs root to mount the tmpfs;
skipped, saying so, without it.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import CreateTopicsRequest, FetchRequest, ProduceRequest
from riverbed.protocol.records import SimpleRecord, build_batch
from riverbed.testing.broker_process import BrokerProcess, free_port
from riverbed.testing.wire import WireClient

PRODUCE, FETCH, CREATE_TOPICS = 0, 1, 19
EXIT_UNCLEAN_STOP = 3


def _produce(client: WireClient, value: bytes) -> Any:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=0, records=build_batch([SimpleRecord(key=None, value=value)])
                    )
                ],
            )
        ],
    )
    return client.call(PRODUCE, 9, request).responses[0].partition_responses[0]


def _high_watermark(client: WireClient) -> int:
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchRequest.FetchTopic(
                topic="t",
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    )
    part = client.call(FETCH, 12, request).responses[0].partitions[0]
    assert part.error_code == ErrorCode.NONE, part
    return int(part.high_watermark)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a 4 MiB tmpfs here (needs root): {mounted.stderr}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def test_disk_full_is_named_and_sigterm_stops_with_one_line(small_fs: Path, tmp_path: Path) -> None:
    data_dir = small_fs / "d"
    log_path = tmp_path / "broker.log"
    broker = BrokerProcess(data_dir, free_port(), log_path, log_level="WARNING")
    broker.start()
    try:
        client = WireClient(broker.bootstrap_servers, client_id="t")
        created = client.call(
            CREATE_TOPICS,
            7,
            CreateTopicsRequest(
                topics=[
                    CreateTopicsRequest.CreatableTopic(
                        name="t", num_partitions=1, replication_factor=1
                    )
                ],
                timeout_ms=5000,
            ),
        )
        assert created.topics[0].error_code == ErrorCode.NONE
        acked = 0
        for _ in range(100):  # 100 x 200 KB cannot fit in 4 MiB
            part = _produce(client, b"x" * 200_000)
            if part.error_code != ErrorCode.NONE:
                break
            acked += 1
        assert part.error_code == ErrorCode.KAFKA_STORAGE_ERROR, part
        assert "No space left on device" in part.error_message, part.error_message
        assert str(data_dir / "t-0") in part.error_message, part.error_message
        assert acked > 0
        # Fill what the big batch left free: since internal topics are created on first
        # use, a fresh broker holds no other files, and a clean stop's few small writes
        # would otherwise still fit.
        for size in (50_000, 10_000, 2_000, 500, 100):
            for _ in range(200):
                if _produce(client, b"x" * size).error_code != ErrorCode.NONE:
                    break
                acked += 1

        assert broker.proc is not None
        started_at = len(log_path.read_text())
        broker.proc.send_signal(signal.SIGTERM)
        assert broker.proc.wait(timeout=60) == EXIT_UNCLEAN_STOP, broker.tail()
        shutdown_log = log_path.read_text()[started_at:]
        assert "Traceback" not in shutdown_log, shutdown_log
        errors = [line for line in shutdown_log.splitlines() if " ERROR " in line]
        assert len(errors) == 1, shutdown_log
        assert "no space left on device (ENOSPC)" in errors[0], errors[0]
        assert "bytes free" in errors[0] and "t-0" in errors[0], errors[0]
        broker.proc = None

        # Grow the file system: every acknowledged record survived the unclean stop.
        subprocess.run(["mount", "-o", "remount,size=64m", str(small_fs)], check=True)
        broker.start()
        assert _high_watermark(WireClient(broker.bootstrap_servers, client_id="t")) == acked
    finally:
        broker.close()
