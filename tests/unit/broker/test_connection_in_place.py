"""KafkaConnection's framing as a BufferedProtocol (issue 18.1): large frames are received
in place, small ones through the scratch buffer; either way the same frames, in order,
each with its pool reservation."""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

from riverbed.broker.config import BrokerConfig
from riverbed.broker.connection import (
    _DIRECT_MIN,
    _POOL_FRAME_MAX,
    _POOL_FRAMES,
    KafkaConnection,
    _frame_pool,
)
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


class _Keeping(_Recording):
    """Keeps each dispatched frame's view alive (as a pending request would)."""

    def __init__(self) -> None:
        super().__init__()
        self.views: list[memoryview] = []

    def _dispatch(self, frame: memoryview, reserved: int) -> None:
        self.views.append(frame)
        super()._dispatch(frame, reserved)


def _feed_in_place(conn: KafkaConnection, body: bytes) -> None:
    """Deliver a frame so that its body is received in place (prefix first)."""
    stream = _frame(body)
    _feed_buffered(conn, stream[:100], 100)
    _feed_buffered(conn, stream[100:], 1 << 20)


def _start_big(conn: KafkaConnection, body: bytes) -> memoryview:
    """Feed the prefix and the start of ``body``; the in-place view receiving the rest."""
    _feed_buffered(conn, _frame(body)[:100], 100)
    assert conn._direct is not None
    return conn._direct


def test_in_place_buffer_is_reused_once_nothing_references_it() -> None:
    _frame_pool().clear()
    conn = _Recording()
    first = bytes(range(256)) * (_DIRECT_MIN // 128)
    view = _start_big(conn, first)
    buffer = id(view.obj)  # kept by the pool from here on: the id stays its own
    del view
    _feed_buffered(conn, _frame(first)[100:], 1 << 20)
    second = b"\x05" * (_DIRECT_MIN + 7)  # smaller: the start of the same buffer
    view = _start_big(conn, second)
    assert id(view.obj) == buffer and len(view) == len(second)
    del view
    _feed_buffered(conn, _frame(second)[100:], 1 << 20)
    assert [f for f, _r in conn.frames] == [first, second]
    assert conn._pool.used == 0


def test_in_place_buffer_still_referenced_is_not_reused() -> None:
    _frame_pool().clear()
    conn = _Keeping()
    first = b"\x01" * (_DIRECT_MIN * 2)
    _feed_in_place(conn, first)
    second = b"\x02" * (_DIRECT_MIN * 2)
    view = _start_big(conn, second)
    assert view.obj is not conn.views[0].obj  # the first frame is still in use
    del view
    _feed_buffered(conn, _frame(second)[100:], 1 << 20)
    assert bytes(conn.views[0]) == first  # never overwritten
    assert bytes(conn.views[1]) == second
    conn.views.clear()  # released: the next frame may take either buffer
    third = b"\x03" * (_DIRECT_MIN * 2)
    _feed_in_place(conn, third)
    assert [f for f, _r in conn.frames] == [first, second, third]


def test_pool_keeps_few_buffers_and_no_huge_ones() -> None:
    _frame_pool().clear()
    conn = _Keeping()  # every frame stays referenced: each needs a buffer of its own
    for i in range(_POOL_FRAMES + 3):
        _feed_in_place(conn, bytes([i]) * (_DIRECT_MIN + i))
    assert len(_frame_pool()) == _POOL_FRAMES
    huge = b"\x09" * (_POOL_FRAME_MAX + 1)
    _feed_in_place(conn, huge)
    assert all(len(b) <= _POOL_FRAME_MAX for b in _frame_pool())
    assert bytes(conn.views[-1]) == huge
