"""The kernel's io_uring interface, for one kind of request: ``IORING_OP_FSYNC``.

Why by hand: the only io_uring binding on PyPI with wheels (``liburing`` 2026.3.30, built
with Zig) is compiled for CPUs with AVX-512 and kills the process with SIGILL on any
other (an AMD EPYC without AVX-512 here, 2026-11-28); its source-only releases need a C
compiler at install, and Debian's liburing 2.3 exports none of the inline functions a
submission needs.  The part a broker needs is small and the kernel's ABI is stable, so
this module speaks it directly: three system calls through :mod:`ctypes` (with the GIL
held: they do not block) and the shared rings through :mod:`mmap`.

Layout (``include/uapi/linux/io_uring.h``): ``io_uring_setup(entries, params)`` fills
``struct io_uring_params`` (120 bytes: ten u32 and ``io_sqring_offsets``,
``io_cqring_offsets``, each eight u32 and a u64) and answers the ring's descriptor; the
submission ring (head, tail, mask, the index array) is mapped at offset 0, the
completion ring (head, tail, mask, 16-byte CQEs: u64 user_data, s32 res, u32 flags) at
``0x8000000``, the 64-byte SQEs at ``0x10000000``.  A submission fills the SQE at
``tail & mask``, puts its index in the array, stores ``tail + 1`` and calls
``io_uring_enter(fd, n, 0, 0)`` for the ``n`` entries queued and not yet taken; a
completion is read at ``head & mask`` and consumed by storing ``head + 1``.

Memory ordering: the kernel reads the submission tail with acquire semantics and
publishes the completion tail with release semantics; on x86_64 (total store order)
plain loads and stores, made in program order by the interpreter, give the matching
release and acquire on our side, so :func:`supported` is x86_64 Linux only (elsewhere
the flusher's helper threads fsync).  Each 32-bit head or tail is read and written with
one aligned 4-byte access (a ``memoryview`` of format ``I``).

Thread-safety: none; :class:`riverbed.storage.uring.FsyncRing` serialises every call
under its lock.  Crash behaviour: nothing persistent; the kernel releases the ring with
its descriptor (an fsync already running completes, unread).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import struct
import sys
from typing import Any

_SYS_IO_URING_SETUP = 425  # the same numbers on every architecture (since Linux 5.1)
_SYS_IO_URING_ENTER = 426
_SYS_IO_URING_REGISTER = 427

_OFF_SQ_RING = 0
_OFF_CQ_RING = 0x8000000
_OFF_SQES = 0x10000000

IORING_OP_FSYNC = 3
IORING_FSYNC_DATASYNC = 1
_IORING_REGISTER_EVENTFD = 4

_SQE = struct.Struct("=BBHiQQIIQHHiQQ")  # opcode flags ioprio fd off addr len op_flags
#                                          user_data buf_index personality splice_fd_in
#                                          addr3 pad: 64 bytes
_CQE = struct.Struct("=QiI")  # user_data res flags: 16 bytes
assert _SQE.size == 64 and _CQE.size == 16


class _SqOffsets(ctypes.Structure):
    _fields_ = [
        *((name, ctypes.c_uint32) for name in ("head", "tail", "ring_mask", "ring_entries")),
        *((name, ctypes.c_uint32) for name in ("flags", "dropped", "array", "resv1")),
        ("user_addr", ctypes.c_uint64),
    ]


class _CqOffsets(ctypes.Structure):
    _fields_ = [
        *((name, ctypes.c_uint32) for name in ("head", "tail", "ring_mask", "ring_entries")),
        *((name, ctypes.c_uint32) for name in ("overflow", "cqes", "flags", "resv1")),
        ("user_addr", ctypes.c_uint64),
    ]


class _Params(ctypes.Structure):
    _fields_ = [
        ("sq_entries", ctypes.c_uint32),
        ("cq_entries", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("sq_thread_cpu", ctypes.c_uint32),
        ("sq_thread_idle", ctypes.c_uint32),
        ("features", ctypes.c_uint32),
        ("wq_fd", ctypes.c_uint32),
        ("resv", ctypes.c_uint32 * 3),
        ("sq_off", _SqOffsets),
        ("cq_off", _CqOffsets),
    ]


assert ctypes.sizeof(_Params) == 120


def supported() -> str | None:
    """None where this module can work, else why not (a short phrase)."""
    if sys.platform != "linux":
        return f"io_uring is Linux's ({sys.platform} here)"
    if platform.machine() not in ("x86_64", "AMD64"):
        return f"the io_uring binding is for x86_64 only ({platform.machine()} here)"
    return None


_SYSCALL: Any = None  # libc's syscall(), looked up on first use


def _syscall(nr: int, *args: object) -> int:
    """``syscall(nr, *args)`` with the GIL held (ints passed as C longs, None as NULL);
    OSError for -1 (errno), else the result."""
    global _SYSCALL
    if _SYSCALL is None:
        # A PyDLL's calls keep the GIL: no hand-off to another thread on the event loop.
        _SYSCALL = ctypes.PyDLL(None, use_errno=True)["syscall"]
        _SYSCALL.restype = ctypes.c_long
    res = int(
        _SYSCALL(ctypes.c_long(nr), *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))
    )
    if res < 0:
        err = ctypes.get_errno() or errno.EIO
        raise OSError(err, os.strerror(err))
    return res


class KernelRing:
    """An io_uring of ``entries`` submission slots (module docstring).  Raises OSError
    where the kernel refuses one (``io_uring_disabled``, seccomp, a kernel before 5.1)."""

    def __init__(self, entries: int) -> None:
        why = supported()
        if why is not None:
            raise OSError(errno.ENOSYS, why)
        params = _Params()
        self.fd = _syscall(_SYS_IO_URING_SETUP, entries, ctypes.byref(params))
        self._maps: list[mmap.mmap] = []
        try:
            sq, cq = params.sq_off, params.cq_off
            sq_ring = self._map(sq.array + params.sq_entries * 4, _OFF_SQ_RING)
            cq_ring = self._map(cq.cqes + params.cq_entries * _CQE.size, _OFF_CQ_RING)
            self._sqes = self._map(params.sq_entries * _SQE.size, _OFF_SQES)
        except BaseException:
            self._unmap()
            os.close(self.fd)
            raise
        self._sq_u32 = memoryview(sq_ring).cast("I")
        self._cq_u32 = memoryview(cq_ring).cast("I")
        self._cq_ring = cq_ring
        self._sq_head, self._sq_tail = sq.head // 4, sq.tail // 4
        self._sq_array = sq.array // 4
        self._sq_mask = self._sq_u32[sq.ring_mask // 4]
        self._sq_entries = params.sq_entries
        self._cq_head, self._cq_tail = cq.head // 4, cq.tail // 4
        self._cq_mask = self._cq_u32[cq.ring_mask // 4]
        self._cqes = cq.cqes
        self._tail = self._sq_u32[self._sq_tail]  # ours to advance; the kernel reads it

    def _map(self, length: int, offset: int) -> mmap.mmap:
        m = mmap.mmap(
            self.fd,
            length,
            flags=mmap.MAP_SHARED | mmap.MAP_POPULATE,
            prot=mmap.PROT_READ | mmap.PROT_WRITE,
            offset=offset,
        )
        self._maps.append(m)
        return m

    def register_eventfd(self, efd: int) -> None:
        """Have every completion signal eventfd ``efd``."""
        fd_arg = ctypes.c_int(efd)
        _syscall(_SYS_IO_URING_REGISTER, self.fd, _IORING_REGISTER_EVENTFD, ctypes.byref(fd_arg), 1)

    def submit_fsync(self, fd: int, user_data: int, op_flags: int = IORING_FSYNC_DATASYNC) -> None:
        """Queue and submit one fsync of ``fd`` (fdatasync with the default flags); its
        completion will carry ``user_data``.  OSError if the kernel took none."""
        tail, head = self._tail, self._sq_u32[self._sq_head]
        if (tail - head) & 0xFFFFFFFF >= self._sq_entries:
            raise OSError(errno.EAGAIN, "io_uring submission queue full")
        index = tail & self._sq_mask
        _SQE.pack_into(
            self._sqes, index * _SQE.size, IORING_OP_FSYNC, 0, 0, fd, 0, 0, 0, op_flags, user_data,
            0, 0, 0, 0, 0,
        )  # fmt: skip
        self._sq_u32[self._sq_array + index] = index
        self._tail = (tail + 1) & 0xFFFFFFFF
        self._sq_u32[self._sq_tail] = self._tail  # after the SQE: the kernel may read it now
        # Everything queued and not yet taken: an entry left by an enter that failed goes
        # too, or each later submission would push only the one before it.
        pending = (self._tail - head) & 0xFFFFFFFF  # it takes entries only in an enter
        submitted = _syscall(_SYS_IO_URING_ENTER, self.fd, pending, 0, 0, None, 0)
        if submitted < 1:
            raise OSError(errno.EAGAIN, f"io_uring accepted no request ({submitted})")

    def completions(self) -> list[tuple[int, int]]:
        """Every completion posted so far, as ``(user_data, res)`` (``res`` 0 or minus
        an errno), consumed."""
        head = self._cq_u32[self._cq_head]
        tail = self._cq_u32[self._cq_tail]  # before the CQEs it covers (module docstring)
        out = []
        while head != tail:
            user_data, res, _flags = _CQE.unpack_from(
                self._cq_ring, self._cqes + (head & self._cq_mask) * _CQE.size
            )
            out.append((user_data, res))
            head = (head + 1) & 0xFFFFFFFF
        self._cq_u32[self._cq_head] = head
        return out

    def close(self) -> None:
        """Release the mappings and the ring (idempotent)."""
        if self.fd < 0:
            return
        self._sq_u32.release()
        self._cq_u32.release()
        self._unmap()
        os.close(self.fd)
        self.fd = -1

    def _unmap(self) -> None:
        for m in self._maps:
            m.close()
        self._maps = []
