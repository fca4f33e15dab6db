"""KafkaConnection's framing as a BufferedProtocol (issue 18.1): large frames are received
in place, small ones through the scratch buffer; either way the same frames, in order,
each with its pool reservation."""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

from riverbed.broker.config import BrokerConfig
from riverbed.broker.connection import _DIRECT_MIN, KafkaConnection
from riverbed.broker.limits import MemoryPool


class _Recording(KafkaConnection):
    """Records dispatched frames instead of decoding them."""

    def __init__(self) -> None:
        broker: Any = SimpleNamespace(
            config=BrokerConfig(),
            request_pool=MemoryPool(64 << 20),
            connections=set(),
            connection_closed=lambda connection_id: None,
        )
        super().__init__(broker)
        self.frames: list[tuple[bytes, int]] = []

    def _dispatch(self, frame: memoryview, reserved: int) -> None:
        self.frames.append((bytes(frame), reserved))
        self._pool.release(reserved)


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _feed_buffered(conn: KafkaConnection, data: bytes, step: int) -> None:
    """Deliver ``data`` as a transport would: into get_buffer's buffer, ``step`` at most."""
    pos = 0
    while pos < len(data):
        buf = conn.get_buffer(-1)
        n = min(step, len(buf), len(data) - pos)
        buf[:n] = data[pos : pos + n]
        conn.buffer_updated(n)
        pos += n


def _bodies() -> list[bytes]:
    big = bytes(range(256)) * ((_DIRECT_MIN + 1000) // 256)
    return [b"small-1", big, b"small-2", big[::-1] + b"x", b"s3"]


def test_buffered_reads_give_the_same_frames_in_order() -> None:
    bodies = _bodies()
    stream = b"".join(_frame(b) for b in bodies)
    for step in (1, 3, 4096, 70_000, len(stream)):
        conn = _Recording()
        _feed_buffered(conn, stream, step)
        assert [f for f, _r in conn.frames] == bodies, step
        assert [r for _f, r in conn.frames] == [len(b) for b in bodies]
        assert conn._pool.used == 0


def test_in_place_frame_is_the_buffer_the_transport_filled() -> None:
    conn = _Recording()
    big = b"\x07" * (_DIRECT_MIN * 2)
    stream = _frame(big)
    _feed_buffered(conn, stream[:100], 100)  # prefix and the start of the body
    assert conn._direct is not None
    rest = conn.get_buffer(-1)
    assert len(rest) == len(big) - 96  # exactly the rest of the body, never the next frame
    _feed_buffered(conn, stream[100:], 1 << 20)
    assert conn._direct is None
    assert conn.frames == [(big, len(big))]


def test_data_received_still_works_mid_frame() -> None:
    bodies = _bodies()
    stream = b"".join(_frame(b) for b in bodies)
    conn = _Recording()
    _feed_buffered(conn, stream[:5000], 5000)  # into the big frame, received in place
    assert conn._direct is not None
    for pos in range(5000, len(stream), 30_000):  # then plain data_received calls
        conn.data_received(stream[pos : pos + 30_000])
    assert [f for f, _r in conn.frames] == bodies


def test_close_mid_frame_releases_its_reservation() -> None:
    conn = _Recording()
    big = b"\x01" * (_DIRECT_MIN + 10)
    _feed_buffered(conn, _frame(big)[:1000], 1000)
    assert conn._pool.used == len(big)
    conn.connection_lost(None)
    assert conn._pool.used == 0
    assert conn._direct is None
