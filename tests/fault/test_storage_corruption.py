"""Corruption of acknowledged data is detected, never mistaken for a torn tail, never
served and never silently hides records.

    acknowledged (fsynced)            flushed.mark         torn write allowed
    [batch 0][batch 1] ... [batch k]  ^ offset/byte   [batch k+1 ...]
    damage here: partition offline    |               damage here: truncated (WARNING)
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pytest

from riverbed.clock import ManualClock
from riverbed.errors import CorruptSegmentError
from riverbed.protocol.records import build_batch, iter_batches_with_records
from riverbed.storage import LogConfig, LogManager, PartitionLog
from riverbed.storage.config import LONG_MAX
from riverbed.storage.flush_mark import FLUSH_MARK_FILE

DURABLE = LogConfig(segment_bytes=1 << 20, index_interval_bytes=256)  # fsync per append
LAZY = LogConfig(segment_bytes=1 << 20, index_interval_bytes=256, flush_messages=LONG_MAX)


def fill(directory: Path, config: LogConfig, n: int, *, flush_after: int | None = None) -> None:
    """n one-record batches; with ``flush_after`` only that many are fsynced (the rest
    stay in the page cache), then a crash-like close."""
    log = PartitionLog.open(directory, config, clock=ManualClock())
    for i in range(n):
        if flush_after is not None and i == flush_after:
            log.flush()
        log.append(build_batch([(None, f"value-{i}".encode(), 1000 + i)]))
    log.close_unclean()


def batch_positions(path: Path) -> list[int]:
    """Where each batch starts; stops at the file's end or at pre-zeroed space after the
    last batch (a zero length: riverbed.storage.preallocate)."""
    data = path.read_bytes()
    pos, out = 0, []
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos + 8 : pos + 12], "big")
        if length == 0:
            break
        out.append(pos)
        pos += length + 12
    return out


def flip(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        b = f.read(1)[0]
        f.seek(position)
        f.write(bytes([b ^ 0x10]))


def read_values(log: PartitionLog) -> list[bytes | None]:
    out: list[bytes | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).records
        for h, rs in iter_batches_with_records(data):
            out.extend(r.value for r in rs if r.offset >= offset)
            offset = h.next_offset
    return out


def test_flipped_byte_below_flushed_position_takes_partition_offline(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    fill(d, DURABLE, 300)
    seg = d / "00000000000000000000.log"
    victim = batch_positions(seg)[95]
    flip(seg, victim + 40)  # inside the CRC-covered part of batch 95 of 300
    size = seg.stat().st_size
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(d, DURABLE, clock=ManualClock())
    assert log.offline_error is not None
    assert "torn tail" not in caplog.text
    assert any(r.levelno == logging.ERROR and "OFFLINE" in r.getMessage() for r in caplog.records)
    with pytest.raises(CorruptSegmentError, match=rf"{seg.name} at byte {victim}\b"):
        log.read(0, 1 << 20)
    with pytest.raises(CorruptSegmentError):
        log.append(build_batch([(None, b"x", 1)]))
    log.close()
    assert seg.stat().st_size == size  # the 205 acknowledged records after it are kept
    assert not (d / ".clean_shutdown").exists()  # the next start checks again
    assert PartitionLog.open(d, DURABLE, clock=ManualClock()).offline_error is not None


def test_torn_write_beyond_flushed_position_is_truncated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    fill(d, LAZY, 20, flush_after=12)
    seg = d / "00000000000000000000.log"
    flip(seg, batch_positions(seg)[15] + 40)
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(d, LAZY, clock=ManualClock())
    assert log.offline_error is None
    assert log.log_end_offset == 15
    assert "torn tail" in caplog.text
    assert read_values(log) == [f"value-{i}".encode() for i in range(15)]
    log.close()


def test_log_cut_below_flushed_position_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    fill(d, DURABLE, 50)
    seg = d / "00000000000000000000.log"
    with open(seg, "r+b") as f:
        f.truncate(batch_positions(seg)[30] + 5)
    log = PartitionLog.open(d, DURABLE, clock=ManualClock())
    assert log.offline_error is not None
    with pytest.raises(CorruptSegmentError, match="acknowledged"):
        log.read(0, 100)


def test_other_partitions_keep_working(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for p in (0, 1):
        fill(data / f"t-{p}", DURABLE, 40)
    seg = data / "t-0" / "00000000000000000000.log"
    flip(seg, batch_positions(seg)[10] + 40)
    mgr = LogManager(data, start_background=False, default_config=DURABLE)
    try:
        bad, good = mgr.get("t", 0), mgr.get("t", 1)
        assert bad is not None and good is not None
        with pytest.raises(CorruptSegmentError):
            bad.read(0, 100)
        assert read_values(good) == [f"value-{i}".encode() for i in range(40)]
        good.append(build_batch([(None, b"more", 1)]))
        assert good.log_end_offset == 41
    finally:
        mgr.close()


def test_garbage_checkpoint_is_logged_and_fully_recovered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    fill(d, DURABLE, 10)
    (d / "partition.checkpoint").write_bytes(b"\x00garbage\xff\n")
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(d, DURABLE, clock=ManualClock())
    assert "partition.checkpoint" in caplog.text and "full recovery" in caplog.text
    assert read_values(log) == [f"value-{i}".encode() for i in range(10)]
    log.close()


def test_garbage_flush_mark_falls_back_to_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    fill(d, LAZY, 10, flush_after=5)
    (d / FLUSH_MARK_FILE).write_bytes(b"\xff" * 32)
    with caplog.at_level(logging.WARNING):
        log = PartitionLog.open(d, LAZY, clock=ManualClock())
    assert FLUSH_MARK_FILE in caplog.text
    assert log.log_end_offset == 10
    log.close()


def test_truncate_to_is_not_mistaken_for_lost_data(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    fill(d, DURABLE, 20)
    log = PartitionLog.open(d, DURABLE, clock=ManualClock())
    log.truncate_to(7)
    log.append(build_batch([(None, b"after", 1)]))
    log.close_unclean()
    shutil.copytree(d, tmp_path / "copy")
    log = PartitionLog.open(tmp_path / "copy", DURABLE, clock=ManualClock())
    assert log.offline_error is None
    assert read_values(log)[-2:] == [b"value-6", b"after"]
    log.close()


# -- serving: sealed segments below the recovery point are verified before being served

SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=256)


def sealed_log(d: Path, n: int = 100) -> Path:
    """n batches over several segments, closed cleanly: every segment is trusted at the
    next open (no CRC check at start-up).  Returns the first segment's path."""
    log = PartitionLog.open(d, SMALL, clock=ManualClock())
    for i in range(n):
        log.append(build_batch([(None, f"value-{i}".encode(), 1000 + i)]))
    log.close()
    segments = sorted(d.glob("*.log"))
    assert len(segments) > 3
    return segments[0]


def consume(log: PartitionLog) -> tuple[list[bytes | None], CorruptSegmentError | None]:
    """Read like a consumer from the start; stops at the first error."""
    out: list[bytes | None] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        try:
            data = log.read(offset, 1 << 20).records
        except CorruptSegmentError as exc:
            return out, exc
        for h, rs in iter_batches_with_records(data):
            out.extend(r.value for r in rs if r.offset >= offset)
            offset = h.next_offset
    return out, None


@pytest.mark.parametrize("field", ["batch_length", "base_offset", "crc_covered"])
def test_corrupt_sealed_batch_is_never_served_and_hides_nothing(
    tmp_path: Path, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    seg = sealed_log(d)
    victim = batch_positions(seg)[3]  # before the segment's last index entry
    where = {"batch_length": victim + 10, "base_offset": victim + 7, "crc_covered": victim + 61}[
        field
    ]
    flip(seg, where)
    log = PartitionLog.open(d, SMALL, clock=ManualClock())
    assert log.offline_error is None  # a trusted segment is not checked at start-up
    with caplog.at_level(logging.ERROR):
        values, error = consume(log)
    assert values == [f"value-{i}".encode() for i in range(3)]  # served up to the damage
    assert error is not None and f"{seg.name} at byte {victim}:" in str(error)
    assert "corrupt record batch" in caplog.text
    with pytest.raises(CorruptSegmentError):  # and on every later try
        log.read(3, 1 << 20)
    assert read_values_from(log, 30)[0] == b"value-30"  # later segments still served
    log.close()


def read_values_from(log: PartitionLog, offset: int) -> list[bytes | None]:
    data = log.read(offset, 1 << 20).records
    return [r.value for _h, rs in iter_batches_with_records(data) for r in rs if r.offset >= offset]


def test_bad_index_entry_does_not_skip_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    seg = sealed_log(d)
    index = seg.with_suffix(".index")
    data = bytearray(index.read_bytes())
    assert len(data) >= 16
    data[8:12] = (int.from_bytes(data[8:12], "big") - 1).to_bytes(4, "big")  # key - 1
    index.write_bytes(bytes(data))
    log = PartitionLog.open(d, SMALL, clock=ManualClock())
    with caplog.at_level(logging.WARNING):
        values, error = consume(log)
        for _ in range(2):  # the second entry now claims offset 7 for offset 8's batch
            assert read_values_from(log, 7) == [f"value-{i}".encode() for i in range(7, 26)]
    assert error is None
    assert values == [f"value-{i}".encode() for i in range(100)]
    assert caplog.text.count("disagrees with its verified log") == 1  # dropped, not re-hit
    log.close()


# -- through the broker, with a real client


def test_broker_never_serves_a_corrupt_batch_and_keeps_other_partitions(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from riverbed.testing.embedded import EmbeddedBroker

    broker = EmbeddedBroker(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("bad", "good")]).values():
            f.result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
        for i in range(100):
            for topic in ("bad", "good"):
                producer.produce(topic, value=f"{topic}-{i}".encode())
            if i % 10 == 9:
                assert producer.flush(30) == 0  # one batch of 10 per flush
        del producer
        broker.stop()  # clean: at the next start no segment is CRC-checked
        seg = next((tmp_path / "data").rglob("bad-0/00000000000000000000.log"))
        positions = batch_positions(seg)
        assert len(positions) >= 5
        flip(seg, positions[4] + 61)
        broker.start()

        def consume(topic: str, want: int, wait_s: float) -> list[bytes]:
            consumer = Consumer(
                {
                    "bootstrap.servers": broker.bootstrap_servers,
                    "group.id": "g",
                    "enable.auto.commit": False,
                }
            )
            consumer.assign([TopicPartition(topic, 0, 0)])
            got: list[bytes] = []
            deadline = time.monotonic() + wait_s
            while len(got) < want and time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
            consumer.close()
            return got

        assert consume("good", 100, 30) == [f"good-{i}".encode() for i in range(100)]
        intact = seg.read_bytes()[: positions[4]]
        before_damage = sum(len(rs) for _h, rs in iter_batches_with_records(intact))
        with caplog.at_level(logging.ERROR):
            got = consume("bad", 100, 5)
        # everything before the damaged batch, nothing from it or after it
        assert got == [f"bad-{i}".encode() for i in range(before_damage)]
        assert f"{seg.name} at byte {positions[4]}:" in caplog.text
    finally:
        broker.stop()


def test_compaction_refuses_a_corrupt_segment_instead_of_dropping_its_tail(tmp_path: Path) -> None:
    from riverbed.storage.cleaner import LogCleaner

    clock = ManualClock(1_700_000_000_000)
    config = LogConfig(cleanup_policy="compact", segment_bytes=1 << 20)
    log = PartitionLog.open(tmp_path / "c-0", config, clock=clock)
    for i in range(60):
        log.append(build_batch([(f"k{i % 5}".encode(), f"v{i}".encode(), clock.now_ms())]))
        if i % 20 == 19:
            log.roll()
    log.append(build_batch([(b"k0", b"active", clock.now_ms())]))
    first = log.segments()[0]
    before = first.log_path.read_bytes()
    flip(first.log_path, batch_positions(first.log_path)[10] + 10)  # a batch length
    damaged = first.log_path.read_bytes()
    cleaner = LogCleaner(clock)
    assert cleaner.clean(log) is None
    status = cleaner.status(log)
    assert status.last_error is not None and "corrupt record batch" in status.last_error
    assert first.log_path.read_bytes() == damaged != before  # not replaced by a short copy
    assert log.segments()[0] is first
    log.close()


def test_broker_starts_with_an_offline_partition_and_serves_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from riverbed.testing.embedded import EmbeddedBroker

    broker = EmbeddedBroker(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("bad", "good")]).values():
            f.result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
        for i in range(50):
            for topic in ("bad", "good"):
                producer.produce(topic, value=f"{topic}-{i}".encode())
            if i % 10 == 9:
                assert producer.flush(30) == 0
        del producer
        broker.stop()
        bad = next((tmp_path / "data").rglob("bad-0"))
        (bad / ".clean_shutdown").unlink()  # as after kill -9
        seg = bad / "00000000000000000000.log"
        size = seg.stat().st_size
        flip(seg, batch_positions(seg)[2] + 61)  # acknowledged, fsynced data
        with caplog.at_level(logging.ERROR):
            broker.start()
        assert "OFFLINE" in caplog.text and seg.name in caplog.text

        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "g",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("good", 0, 0), TopicPartition("bad", 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 50 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.close()
        assert sorted(got) == sorted(f"good-{i}".encode() for i in range(50))

        errors: list[KafkaError] = []
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 3000}
        )
        producer.produce(
            "bad", value=b"x", on_delivery=lambda err, _m: errors.append(err) if err else None
        )
        producer.produce(
            "good", value=b"y", on_delivery=lambda err, _m: errors.append(err) if err else None
        )
        producer.flush(30)
        assert len(errors) == 1  # only the offline partition refuses
        del producer
    finally:
        broker.stop()
    assert seg.stat().st_size == size  # nothing was truncated


WRITER = """
import sys
from pathlib import Path
from riverbed.protocol.records import build_batch
from riverbed.storage import LogConfig, PartitionLog

log = PartitionLog.open(Path(sys.argv[1]), LogConfig(segment_bytes=1 << 24))
i = 0
while True:
    r = log.append(build_batch([(None, b"record-%d" % i, 1)]))
    log.flush_future(r.last_offset).result()
    print(r.last_offset, flush=True)
    i += 1
"""


def test_kill_9_then_a_flipped_byte_mid_segment_is_corruption_not_a_torn_tail(
    tmp_path: Path,
) -> None:
    """The issue's scenario: kill -9 a writer, flip a byte in the middle of the
    acknowledged part of the active segment, restart."""
    import signal
    import subprocess
    import sys

    d = tmp_path / "t-0"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(d)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    acked = -1
    deadline = time.monotonic() + 60
    while acked < 200 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked = int(line)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert acked >= 200, "the writer acknowledged too little in time"
    intact = tmp_path / "intact"
    shutil.copytree(d, intact)
    log = PartitionLog.open(intact, DURABLE, clock=ManualClock())  # no damage: no alarm
    assert log.offline_error is None and log.log_end_offset > acked
    log.close()

    seg = d / "00000000000000000000.log"
    positions = batch_positions(seg)
    victim = positions[len(positions) // 3]
    flip(seg, victim + 40)
    log = PartitionLog.open(d, DURABLE, clock=ManualClock())
    assert log.offline_error is not None and f"at byte {victim}" in str(log.offline_error)
    assert len(batch_positions(seg)) == len(positions)  # every acknowledged batch kept


def test_broker_starts_despite_a_corrupt_consumer_offsets_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from riverbed.testing.embedded import EmbeddedBroker

    broker = EmbeddedBroker(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        producer.produce("t", value=b"one")
        assert producer.flush(30) == 0
        del producer
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "g",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("t", 0, 0)])
        deadline = time.monotonic() + 30
        msg = None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
        assert msg is not None and msg.error() is None
        consumer.commit(message=msg, asynchronous=False)
        consumer.close()
        broker.stop()
        logs = [
            p for p in (tmp_path / "data").rglob("__consumer_offsets-*/*.log") if p.stat().st_size
        ]
        assert logs
        flip(logs[0], 61)  # the first batch's CRC-covered bytes
        with caplog.at_level(logging.ERROR):
            broker.start()  # used to fail: the replay raised
        assert "replayed only up to offset 0" in caplog.text
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "h",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["t"])
        msg = None
        deadline = time.monotonic() + 30
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
        consumer.close()
        assert msg is not None and msg.value() == b"one"
    finally:
        broker.stop()


def test_scrubber_finds_corruption_nobody_has_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from riverbed.storage.scrub import Scrubber

    d = tmp_path / "t-0"
    seg = sealed_log(d)
    victim = batch_positions(seg)[3]
    flip(seg, victim + 61)
    log = PartitionLog.open(d, SMALL, clock=ManualClock())
    scrubber = Scrubber(lambda: [log], step_bytes=256)
    with caplog.at_level(logging.ERROR):
        assert scrubber.run_once() > 0
    assert f"{seg.name} at byte {victim}:" in caplog.text
    segments = log.segments()
    assert segments[0].verified_to == victim
    assert all(s.verified_to == s.size for s in segments[1:])
    assert scrubber.run_once() == 0  # every byte is verified once
    values, error = consume(log)
    assert values == [f"value-{i}".encode() for i in range(3)] and error is not None
    log.close()


def test_log_manager_scrubs_in_the_background(tmp_path: Path) -> None:
    data = tmp_path / "data"
    sealed_log(data / "t-0")
    mgr = LogManager(data, default_config=SMALL, scrub_bytes_per_s=64 << 20)
    try:
        log = mgr.get("t", 0)
        assert log is not None
        # trusted at start-up (verified_to 0); nobody reads: only the scrubber verifies
        deadline = time.monotonic() + 60
        while any(s.verified_to < s.size for s in log.segments()):
            assert time.monotonic() < deadline, "the scrubber did not get through"
            time.sleep(0.05)
    finally:
        mgr.close()
