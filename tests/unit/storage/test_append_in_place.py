"""The produce append path writes the request's batches as given (issue 18.1): each batch's
new base offset beside the rest of the batch, one ``pwritev``, no copy, input unchanged."""

from __future__ import annotations

import struct
from pathlib import Path

from _batches import batch, values

from riverbed.clock import ManualClock
from riverbed.protocol.batch import BatchHeader, validate_batch
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.segment import _write_all


def open_log(tmp_path: Path, **cfg: object) -> PartitionLog:
    return PartitionLog.open(
        tmp_path / "t-0",
        LogConfig(**cfg),  # type: ignore[arg-type]
        clock=ManualClock(),
    )


def test_append_leaves_the_request_bytes_alone(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(b"first"))
    two = batch(b"a", b"b") + batch(b"c")
    request = bytearray(b"\xff" * 7 + two + b"\xee" * 5)  # the records inside a frame
    before = bytes(request)
    view = memoryview(request)[7 : 7 + len(two)]
    result = log.append(view)
    assert (result.base_offset, result.last_offset) == (1, 3)
    assert bytes(request) == before  # not rewritten in place
    out = log.read(0, 1 << 20).records
    assert values(out) == [(0, b"first"), (1, b"a"), (2, b"b"), (3, b"c")]
    # On disk: the batches as sent, but for the 8-byte base offset (outside the CRC).
    first_size = BatchHeader.parse(two).size
    on_disk = out[len(batch(b"first")) :]
    assert on_disk[8:first_size] == two[8:first_size]
    assert on_disk[first_size + 8 :] == two[first_size + 8 :]
    assert struct.unpack_from(">q", on_disk, 0)[0] == 1
    assert struct.unpack_from(">q", on_disk, first_size)[0] == 3
    validate_batch(on_disk, 0)
    validate_batch(on_disk, first_size)
    assert log.segments()[-1].next_offset == 4


def test_log_append_time_topic_still_stamps_a_copy(tmp_path: Path) -> None:
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    records = batch(b"x", ts=5)
    before = bytes(records)
    log.append(records)
    assert records == before
    out = log.read(0, 1 << 20).records
    header = validate_batch(out, 0)
    assert header.timestamp_type == 1


class _ShortWrites:
    """A CachedFile stand-in that writes at most ``step`` bytes per call."""

    def __init__(self, step: int) -> None:
        self.data = bytearray()
        self.step = step
        self.calls = 0

    def _write(self, buf: bytes, position: int) -> int:
        self.calls += 1
        chunk = buf[: self.step]
        self.data[position : position + len(chunk)] = chunk
        return len(chunk)

    def pwrite(self, data: memoryview, position: int) -> int:
        return self._write(bytes(data), position)

    def pwritev(self, parts: list[memoryview], position: int) -> int:
        return self._write(b"".join(parts), position)


def test_write_all_resumes_after_short_writes() -> None:
    parts = [b"abc", b"", memoryview(b"defgh"), bytearray(b"i"), b"jklmnop"]
    for step in (1, 2, 3, 4, 100):
        file = _ShortWrites(step)
        assert _write_all(file, parts, 0) == 16  # type: ignore[arg-type]
        assert bytes(file.data) == b"abcdefghijklmnop"


def test_write_all_splits_more_buffers_than_one_call_takes() -> None:
    parts = [bytes([i % 256]) for i in range(2500)]
    file = _ShortWrites(1 << 20)
    assert _write_all(file, parts, 0) == 2500  # type: ignore[arg-type]
    assert bytes(file.data) == b"".join(parts)
    assert file.calls == 3  # 1024 + 1024 + 452 buffers
